// The test environment, read once from environment variables (same ones as the JS suite).
using Microsoft.AspNetCore.Http.Connections;

namespace SignalrRelay.InteropDotnet;

public sealed record Env(string BaseUrl, string Protocol, string TransportName, HttpTransportType Transport,
                         bool Direct, string? ExpectForwardedFor, string? Only, string[] ExpectTransports,
                         string BackendTransportName)
{
    public static Env FromEnvironment()
    {
        string baseUrl = (Environment.GetEnvironmentVariable("SIGNALR_URL") ?? "").TrimEnd('/');
        if (baseUrl.Length == 0)
            throw new ArgumentException("SIGNALR_URL is not set (e.g. http://127.0.0.1:5000)");

        string protocol = Environment.GetEnvironmentVariable("SIGNALR_PROTOCOL") is { Length: > 0 } p ? p : "json";
        if (protocol != "json" && protocol != "messagepack")
            throw new ArgumentException($"SIGNALR_PROTOCOL must be json or messagepack, not '{protocol}'");

        string transportName = Environment.GetEnvironmentVariable("SIGNALR_TRANSPORT") is { Length: > 0 } t ? t : "WebSockets";
        HttpTransportType transport = transportName switch
        {
            "WebSockets" => HttpTransportType.WebSockets,
            "ServerSentEvents" => HttpTransportType.ServerSentEvents,
            "LongPolling" => HttpTransportType.LongPolling,
            _ => throw new ArgumentException(
                $"SIGNALR_TRANSPORT must be WebSockets, ServerSentEvents or LongPolling, not '{transportName}'"),
        };
        if (protocol == "messagepack" && transport == HttpTransportType.ServerSentEvents)
            throw new ArgumentException("MessagePack needs a binary transport; ServerSentEvents carries text only");

        return new Env(baseUrl, protocol, transportName, transport,
                       Environment.GetEnvironmentVariable("SIGNALR_DIRECT") == "1",
                       Environment.GetEnvironmentVariable("SIGNALR_EXPECT_FORWARDED_FOR"),
                       Environment.GetEnvironmentVariable("SIGNALR_ONLY") is { Length: > 0 } o ? o : null,
                       // The transports the server under test offers in negotiate; a relay may offer fewer.
                       (Environment.GetEnvironmentVariable("SIGNALR_EXPECT_TRANSPORTS") is { Length: > 0 } x
                           ? x : "WebSockets,ServerSentEvents,LongPolling")
                           .Split(',', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries),
                       // The transport the hub sees (Context): a relay may reach it over another one.
                       Environment.GetEnvironmentVariable("SIGNALR_EXPECT_BACKEND_TRANSPORT") is { Length: > 0 } b
                           ? b : transportName);
    }
}
