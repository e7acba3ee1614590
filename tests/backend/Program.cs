// Entry point of the test backend: an unmodified ASP.NET Core SignalR server with three hubs
// (/chat, /status, /secure), JSON + MessagePack protocols, production error texts, and a few
// plain HTTP endpoints (/health, /test/...) that let tests see what the server observed.
using Microsoft.AspNetCore.Authentication;
using SignalrRelay.TestBackend;

var builder = WebApplication.CreateBuilder(args);

builder.Services
    .AddSignalR(options =>
    {
        // Off on purpose: the error texts clients see must be the production ones.
        options.EnableDetailedErrors = false;
        // 1 MB payloads (plus JSON framing) must fit in one hub message.
        options.MaximumReceiveMessageSize = 2 * 1024 * 1024;
    })
    .AddMessagePackProtocol();

builder.Services
    .AddAuthentication(TestTokenAuthHandler.SchemeName)
    .AddScheme<AuthenticationSchemeOptions, TestTokenAuthHandler>(TestTokenAuthHandler.SchemeName, null);
builder.Services.AddAuthorization();

var app = builder.Build();

// BACKEND_LOG_REQUESTS=1: one log line per HTTP request with the headers a relay might change,
// to see what actually arrives (directly or through the relay).
if (Environment.GetEnvironmentVariable("BACKEND_LOG_REQUESTS") == "1")
{
    var requestLog = app.Services.GetRequiredService<ILoggerFactory>().CreateLogger("Requests");
    app.Use((context, next) =>
    {
        var r = context.Request;
        string Header(string name) => r.Headers.TryGetValue(name, out var v) ? $" {name}=[{v}]" : "";
        requestLog.LogWarning("{Method} {Path}{Query}{Headers}", r.Method, r.Path, r.QueryString,
            Header("User-Agent") + Header("X-Requested-With") + Header("Content-Type") + Header("Accept") +
            Header("Authorization") + Header("X-Forwarded-For") + Header("Upgrade") + Header("Cookie") +
            Header("X-SignalR-User-Agent"));
        return next(context);
    });
}

app.UseAuthentication();
app.UseAuthorization();

app.MapGet("/health", () => Results.Text("ok"));

// What the server saw, for tests that want to check from outside the hub.
app.MapGet("/test/disconnects", () => Results.Json(Observations.DisconnectSummary()));
app.MapGet("/test/disconnects/{connectionId}", (string connectionId) =>
    Observations.TryGetDisconnect(connectionId, out var record)
        ? Results.Json(record)
        : Results.NotFound());
app.MapGet("/test/streams", () => Results.Json(Observations.StreamSummary()));

// Stateful reconnect is allowed so tests can hold the relay to what the real server does with it.
app.MapHub<ChatHub>("/chat", options => options.AllowStatefulReconnects = true);
app.MapHub<StatusHub>("/status");
app.MapHub<SecureHub>("/secure");

app.Run();
