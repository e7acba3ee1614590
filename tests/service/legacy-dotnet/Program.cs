// The stock legacy .NET client (Microsoft.AspNet.SignalR.Client 2.4.2, WebSockets) against service
// mode: it knows only the relay's /signalr; the relay asks the test app's negotiate
// (--app-negotiate board=..., ops=...) who it is (TestUserAuthHandler: `?user=NAME`), and the
// app's hubs (tests/service-app/Hubs) see it as a JSON client. Sends from outside a hub call go
// through the app's /test/board/* endpoints (IHubContext). A hub the client did not list at
// negotiate (a HubProxy made after the start: the client's connectionData names only the hubs
// of CreateHubProxy) is asked of the app's negotiate on first use, on WebSockets and on the
// client's fallbacks (server-sent events, long polling). One line per scenario, then
// "N passed, M failed" (tests/lib/Runner.cs).
//   RELAY_URL  the relay, e.g. http://127.0.0.1:8080      APP_URL  the test app
using System.Collections.Concurrent;
using Microsoft.AspNet.SignalR.Client;
using Microsoft.AspNet.SignalR.Client.Hubs;
using Microsoft.AspNet.SignalR.Client.Transports;
using Newtonsoft.Json.Linq;

string relay = (Environment.GetEnvironmentVariable("RELAY_URL") ?? "").TrimEnd('/');
string app = (Environment.GetEnvironmentVariable("APP_URL") ?? "").TrimEnd('/');
if (relay.Length == 0 || app.Length == 0)
{
    Console.Error.WriteLine("set RELAY_URL and APP_URL (scripts/service-tests.sh does)");
    return 2;
}
var http = new HttpClient { Timeout = TimeSpan.FromSeconds(30) };

HubConnection Connection(string? user, string? role = null)
{
    var query = new Dictionary<string, string>();
    if (user is not null)
        query["user"] = user;
    if (role is not null)
        query["role"] = role;
    return new($"{relay}/signalr", query, useDefaultUrl: false);
}

// The transports a scenario runs on: WebSockets and the client's two fallbacks.
var transports = new (string Name, Func<IClientTransport> Make)[]
{
    ("webSockets", () => new WebSocketTransport()),
    ("serverSentEvents", () => new ServerSentEventsTransport()),
    ("longPolling", () => new LongPollingTransport()),
};

// A started connection of `user` listing only board, and an unlisted proxy of ops.
async Task<(HubConnection, IHubProxy board, IHubProxy ops)> Unlisted(string? user, string? role, IClientTransport transport,
                                                                     ConcurrentQueue<string> got)
{
    var connection = Connection(user, role);
    var board = connection.CreateHubProxy("board");
    board.On<string, string>("private", (from, text) => got.Enqueue($"private {from} {text}"));
    await connection.Start(transport);
    return (connection, board, new HubProxy(connection, "ops"));
}

async Task Post(string path)
{
    using var response = await http.PostAsync($"{app}{path}", null);
    Check.Equal(200, (int)response.StatusCode, $"POST {path}");
}

var scenarios = new List<(string, Func<Task>)>
{
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

foreach (var (name, make) in transports)
{
    scenarios.Add(($"legacy dotnet {name}: OnConnected with the app's user, calls, a group and a user send, leave, a stream as progress", async () =>
    {
        string user = $"net-l-{name}";
        using var connection = Connection(user);
        var proxy = connection.CreateHubProxy("board");
        var got = new ConcurrentQueue<string>();
        proxy.On<string, string>("welcome", (id, user) => got.Enqueue($"welcome {id} {user}"));
        proxy.On<string, string, string>("groupMessage", (group, from, text) => got.Enqueue($"group {group} {from} {text}"));
        proxy.On<string, string>("userMessage", (from, text) => got.Enqueue($"user {from} {text}"));
        proxy.On<string, string>("private", (from, text) => got.Enqueue($"private {from} {text}"));
        await connection.Start(make());
        Check.Equal(name, connection.Transport.Name, "transport");
        string id = connection.ConnectionId;
        Check.True(id.Length == 22, $"a Core connection id, not {id}");
        await Wait.Until(() => got.Contains($"welcome {id} {user}"), "the welcome with the app's user id");
        Check.Equal(5, await proxy.Invoke<int>("Add", 2, 3), "Add(2, 3)");
        string group = $"net-g-{name}-{Environment.ProcessId}";
        await proxy.Invoke("AddToGroup", group);
        await Post($"/test/board/group/{group}?message=hi");
        await Wait.Until(() => got.Contains($"group {group} server hi"), "the group send");
        await Post($"/test/board/user/{user}?message=u1");
        await Wait.Until(() => got.Contains("user server u1"), "the user send");
        // Out of the group: its next send passes the client by (the marker after it comes on the
        // same server connection, so it comes after the send would have).
        await proxy.Invoke("RemoveFromGroup", group);
        await proxy.Invoke("SendToGroup", group, "bye");
        await proxy.Invoke("SendToCaller", "marker");
        await Wait.Until(() => got.Contains($"private {id} marker"), "the marker after the group send");
        Check.True(!got.Any(m => m.StartsWith($"group {group} ") && m.EndsWith(" bye")), "no group send after leaving");
        var progress = new ConcurrentQueue<int>();
        await proxy.Invoke<int>("Counter", p => progress.Enqueue(p), 3, 0);
        // Over a fallback the progress comes on the event stream or a poll and the result in the
        // /send's answer, another connection: the relay answers the /send once the progress is
        // written (polled, over long polling, for at most the poll delay and 2 s), but the client
        // forgets the invocation when the result is in and may not have read the rest yet (seen
        // once in five runs over serverSentEvents on a loaded machine): a prefix, in order.
        int[] items = progress.ToArray(), all = { 0, 1, 2 };
        Check.SequenceEqual(name == "webSockets" ? all : all.Take(items.Length), items, "Counter(3) as progress");
        Check.Equal(ConnectionState.Connected, connection.State, "state");
        connection.Stop(TimeSpan.FromSeconds(5));
    }));
    scenarios.Add(($"legacy dotnet {name}: an unlisted hub answers with the app's identity, its pushes reach its subscribers", async () =>
    {
        string user = $"net-u-{name}";
        var got = new ConcurrentQueue<string>();
        var (connection, board, ops) = await Unlisted(user, "admin", make(), got);
        using var _ = connection;
        Check.Equal(name, connection.Transport.Name, "transport");
        // Two calls at once: both held while the app is asked, then answered in order.
        var ping = ops.Invoke<string>("Ping");
        var admin = ops.Invoke<string>("AdminOnly");
        Check.Equal("pong", await ping, "ops.Ping");
        Check.Equal("admin ok", await admin, "ops.AdminOnly (the role claim of the app's token)");
        var who = await ops.Invoke<JObject>("WhoAmI");
        Check.Equal("ops", (string?)who["hub"], "WhoAmI hub");
        Check.Equal(user, (string?)who["userIdentifier"], "WhoAmI user");
        // A legacy client listing ops hears the unlisted caller's Notify.
        using var watcher = Connection($"net-w-{name}");
        var heard = new ConcurrentQueue<string>();
        watcher.CreateHubProxy("ops").On<string, string>("opsMessage", (from, text) => heard.Enqueue($"{from} {text}"));
        await watcher.Start(make());
        await ops.Invoke("Notify", $"from {name}");
        await Wait.Until(() => heard.Contains($"{user} from {name}"), "the unlisted hub's push at a subscriber");
        // The listed hub: calls and pushes as before.
        Check.Equal(5, await board.Invoke<int>("Add", 2, 3), "board.Add");
        await board.Invoke("SendToCaller", "after ops");
        await Wait.Until(() => got.Contains($"private {connection.ConnectionId} after ops"), "board's push to the caller");
        Check.Equal(ConnectionState.Connected, connection.State, "state");
        watcher.Stop(TimeSpan.FromSeconds(5));
        connection.Stop(TimeSpan.FromSeconds(5));
    }));
    scenarios.Add(($"legacy dotnet {name}: an unlisted hub the app refuses is a hub error; the connection lives on", async () =>
    {
        var got = new ConcurrentQueue<string>();
        var (connection, board, ops) = await Unlisted(null, null, make(), got);
        using var _ = connection;
        Check.Equal(name, connection.Transport.Name, "transport");
        foreach (var attempt in new[] { "first", "again" })
        {
            // The .NET client raises a hub error without H:true (not a HubException the hub threw) as this.
            var refused = await Check.Throws<InvalidOperationException>(() => ops.Invoke<string>("Ping"), $"ops.Ping ({attempt})");
            Check.Matches("'ops'.*refused the client \\(401", refused.Message, "the app's refusal");
        }
        Check.Equal(42, await board.Invoke<int>("Add", 20, 22), "board.Add after the refusal");
        Check.Equal(ConnectionState.Connected, connection.State, "state");
        connection.Stop(TimeSpan.FromSeconds(5));
    }));
}

return await Runner.Run(scenarios, TimeSpan.FromSeconds(90));
