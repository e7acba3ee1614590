// Entry point of the service-mode test app: stock ASP.NET Core SignalR hubs (/board, /ops) wired to
// a SignalR "service" with the unmodified Azure SignalR SDK (AddAzureSignalR, NuGet
// Microsoft.Azure.SignalR 1.34.0). Pointed at signalr-relay's service mode (or at probe/) by the
// connection string in Azure:SignalR:ConnectionString, e.g.
//   Endpoint=http://127.0.0.1;Port=5390;AccessKey=secret;Version=1.0;
// Clients never connect here except for negotiate, which the SDK answers with a redirect to the
// service. Plain HTTP endpoints under /test/ let tests see what the app observed and send from
// outside a hub call (IHubContext).
using System.Text.Json;
using System.Text.Json.Serialization;
using Microsoft.AspNetCore.Authentication;
using Microsoft.AspNetCore.SignalR;
using Microsoft.Azure.SignalR;
using SignalrRelay.ServiceApp;

var builder = WebApplication.CreateBuilder(args);
var config = builder.Configuration;

string? connectionString = config["Azure:SignalR:ConnectionString"]
                           ?? config["ConnectionStrings:Azure:SignalR:ConnectionString"];
if (string.IsNullOrWhiteSpace(connectionString))
{
    Console.Error.WriteLine("signalr-service-app: set Azure:SignalR:ConnectionString " +
                            "(env Azure__SignalR__ConnectionString or --Azure:SignalR:ConnectionString=...)");
    return 2;
}

var settings = AppSettings.From(config);

// Quiet by default except for what the SDK says about its server connections (and, at
// Information, about every client connection: the benchmarks set SdkLogLevel=Warning).
builder.Logging.AddFilter("Microsoft.AspNetCore", LogLevel.Warning);
builder.Logging.AddFilter("Microsoft.Hosting", LogLevel.Information);
builder.Logging.AddFilter("Microsoft.Azure.SignalR", settings.SdkLogLevel);

builder.Services
    .AddSignalR(options =>
    {
        // Off on purpose: clients must see the production error texts.
        options.EnableDetailedErrors = false;
        options.MaximumReceiveMessageSize = 2 * 1024 * 1024;
        if (settings.HandshakeTimeoutSeconds is int cht)
            options.HandshakeTimeout = TimeSpan.FromSeconds(cht);
    })
    .AddMessagePackProtocol()
    .AddAzureSignalR(options =>
    {
        options.ConnectionString = connectionString;
        // Few fixed server connections per hub (the SDK's default is 5), so tests see several
        // without drowning in them.
        options.InitialHubServerConnectionCount = settings.ServerConnections;
        options.ServerStickyMode = settings.StickyMode;
        options.GracefulShutdown.Mode = settings.ShutdownMode;
        options.GracefulShutdown.Timeout = TimeSpan.FromSeconds(settings.ShutdownTimeoutSeconds);
        if (settings.ApplicationName is string app)
            options.ApplicationName = app;
        if (settings.AccessTokenLifetimeSeconds is int ttl)
            options.AccessTokenLifetime = TimeSpan.FromSeconds(ttl);
    });

builder.Services
    .AddAuthentication(TestUserAuthHandler.SchemeName)
    .AddScheme<AuthenticationSchemeOptions, TestUserAuthHandler>(TestUserAuthHandler.SchemeName, null);
builder.Services.AddAuthorization();

var app = builder.Build();

app.UseAuthentication();
app.UseAuthorization();

app.MapGet("/health", () => Results.Text("ok"));

// What the hubs observed: connects/disconnects (in order) and who is connected now.
app.MapGet("/test/events", (string? hub) => Results.Json(Observations.Events(hub)));
app.MapGet("/test/connections", (string? hub) => Results.Json(Observations.ConnectedNow(hub)));
app.MapGet("/test/streams", () => Results.Json(Observations.StreamSummary()));
app.MapGet("/test/settings", () => Results.Json(settings, new JsonSerializerOptions(JsonSerializerDefaults.Web)
{
    Converters = { new JsonStringEnumConverter() },
}));

// Sends from outside any hub call (IHubContext): the SDK may pick any server connection.
var send = app.MapGroup("/test/board");
send.MapPost("/all", (IHubContext<Board> hub, string message) =>
    hub.Clients.All.SendAsync("broadcast", "server", message));
send.MapPost("/user/{user}", (IHubContext<Board> hub, string user, string message) =>
    hub.Clients.User(user).SendAsync("userMessage", "server", message));
send.MapPost("/connection/{connectionId}", (IHubContext<Board> hub, string connectionId, string message) =>
    hub.Clients.Client(connectionId).SendAsync("private", "server", message));
send.MapPost("/group/{group}", (IHubContext<Board> hub, string group, string message) =>
    hub.Clients.Group(group).SendAsync("groupMessage", group, "server", message));
send.MapPut("/group/{group}/{connectionId}", async (IHubContext<Board> hub, string group, string connectionId) =>
{
    await hub.Groups.AddToGroupAsync(connectionId, group);
    return Results.Ok();
});
send.MapDelete("/group/{group}/{connectionId}", async (IHubContext<Board> hub, string group, string connectionId) =>
{
    await hub.Groups.RemoveFromGroupAsync(connectionId, group);
    return Results.Ok();
});

app.MapHub<Board>("/board");
app.MapHub<OpsHub>("/ops");
app.MapHub<Bench>("/bench");

app.Run();
return 0;
