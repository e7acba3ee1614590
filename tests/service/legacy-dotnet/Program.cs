// The stock legacy .NET client (Microsoft.AspNet.SignalR.Client 2.4.2, WebSockets) against service
// mode: it knows only the relay's /signalr; the relay asks the test app's negotiate
// (--app-negotiate board=..., ops=...) who it is (TestUserAuthHandler: `?user=NAME`), and the
// app's hubs (tests/service-app/Hubs) see it as a JSON client. Sends from outside a hub call go
// through the app's /test/board/* endpoints (IHubContext). One line per scenario, then
// "N passed, M failed" (tests/lib/Runner.cs).
//   RELAY_URL  the relay, e.g. http://127.0.0.1:8080      APP_URL  the test app
using System.Collections.Concurrent;
using Microsoft.AspNet.SignalR.Client;
using Microsoft.AspNet.SignalR.Client.Transports;

string relay = (Environment.GetEnvironmentVariable("RELAY_URL") ?? "").TrimEnd('/');
string app = (Environment.GetEnvironmentVariable("APP_URL") ?? "").TrimEnd('/');
if (relay.Length == 0 || app.Length == 0)
{
    Console.Error.WriteLine("set RELAY_URL and APP_URL (scripts/service-tests.sh does)");
    return 2;
}
var http = new HttpClient { Timeout = TimeSpan.FromSeconds(30) };

HubConnection Connection(string? user) =>
    new($"{relay}/signalr", user is null ? new Dictionary<string, string>() : new Dictionary<string, string> { ["user"] = user },
        useDefaultUrl: false);

async Task Post(string path)
{
    using var response = await http.PostAsync($"{app}{path}", null);
    Check.Equal(200, (int)response.StatusCode, $"POST {path}");
}

var scenarios = new List<(string, Func<Task>)>
{
    ("legacy dotnet: OnConnected with the app's user, calls, a group and a user send, a stream as progress", async () =>
    {
        using var connection = Connection("net-l");
        var proxy = connection.CreateHubProxy("board");
        var got = new ConcurrentQueue<string>();
        proxy.On<string, string>("welcome", (id, user) => got.Enqueue($"welcome {id} {user}"));
        proxy.On<string, string, string>("groupMessage", (group, from, text) => got.Enqueue($"group {group} {from} {text}"));
        proxy.On<string, string>("userMessage", (from, text) => got.Enqueue($"user {from} {text}"));
        await connection.Start(new WebSocketTransport());
        string id = connection.ConnectionId;
        Check.True(id.Length == 22, $"a Core connection id, not {id}");
        await Wait.Until(() => got.Contains($"welcome {id} net-l"), "the welcome with the app's user id");
        Check.Equal(5, await proxy.Invoke<int>("Add", 2, 3), "Add(2, 3)");
        string group = $"net-g-{Environment.ProcessId}";
        await proxy.Invoke("AddToGroup", group);
        await Post($"/test/board/group/{group}?message=hi");
        await Wait.Until(() => got.Contains($"group {group} server hi"), "the group send");
        await Post("/test/board/user/net-l?message=u1");
        await Wait.Until(() => got.Contains("user server u1"), "the user send");
        var progress = new ConcurrentQueue<int>();
        await proxy.Invoke<int>("Counter", p => progress.Enqueue(p), 3, 0);
        Check.SequenceEqual(new[] { 0, 1, 2 }, progress.ToArray(), "Counter(3) as progress");
        Check.Equal(ConnectionState.Connected, connection.State, "state");
        connection.Stop(TimeSpan.FromSeconds(5));
    }),
    ("legacy dotnet: the app's [Authorize] refuses an anonymous client at negotiate", async () =>
    {
        using var connection = Connection(null);
        connection.CreateHubProxy("ops");
        Exception? refused = null;
        try
        {
            await connection.Start(new WebSocketTransport());
        }
        catch (Exception e)
        {
            refused = e;
        }
        Check.True(refused is not null, "the start must fail");
        Check.True(refused!.ToString().Contains("401") || refused.ToString().Contains("Unauthorized"),
                   $"refused with the app's 401, not {refused.GetType().Name}: {refused.Message}");
    }),
};

return await Runner.Run(scenarios, TimeSpan.FromSeconds(90));
