// The app's own knobs, read from configuration (env ServiceApp__X or --ServiceApp:X=...), so a
// test can start the app with the SDK options it needs.
using Microsoft.Azure.SignalR;

namespace SignalrRelay.ServiceApp;

public sealed record AppSettings(
    int ServerConnections,
    ServerStickyMode StickyMode,
    GracefulShutdownMode ShutdownMode,
    int ShutdownTimeoutSeconds,
    string? ApplicationName,
    int? AccessTokenLifetimeSeconds,
    int? HandshakeTimeoutSeconds,
    LogLevel SdkLogLevel)
{
    public static AppSettings From(IConfiguration config)
    {
        var section = config.GetSection("ServiceApp");
        return new AppSettings(
            ServerConnections: section.GetValue("ServerConnections", 2),
            StickyMode: section.GetValue("StickyMode", ServerStickyMode.Disabled),
            ShutdownMode: section.GetValue("ShutdownMode", GracefulShutdownMode.Off),
            ShutdownTimeoutSeconds: section.GetValue("ShutdownTimeoutSeconds", 30),
            ApplicationName: NullIfEmpty(section["ApplicationName"]),
            AccessTokenLifetimeSeconds: section.GetValue<int?>("AccessTokenLifetimeSeconds"),
            HandshakeTimeoutSeconds: section.GetValue<int?>("HandshakeTimeoutSeconds"),
            SdkLogLevel: section.GetValue("SdkLogLevel", LogLevel.Information));
    }

    private static string? NullIfEmpty(string? s) => string.IsNullOrEmpty(s) ? null : s;
}
