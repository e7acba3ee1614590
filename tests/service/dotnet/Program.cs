// Service-mode scenarios with the stock .NET client (Microsoft.AspNetCore.SignalR.Client), JSON
// and MessagePack: APP_URL is the test app (tests/service-app), whose negotiate redirects to the
// relay. One line per scenario, then "N passed, M failed", exit status 1 on a failure
// (tests/lib/Runner.cs; the assertions are tests/lib/Check.cs).
using System.Collections.Concurrent;
using Microsoft.AspNetCore.Http.Connections;
using Microsoft.AspNetCore.SignalR.Client;
using Microsoft.Extensions.DependencyInjection;

var appUrl = Environment.GetEnvironmentVariable("APP_URL")
             ?? throw new InvalidOperationException("APP_URL is not set: run through scripts/service-tests.sh");
var timeout = TimeSpan.FromSeconds(10);
int markers = 0;

async Task<Client> Connect(string user, bool messagePack)
{
    var builder = new HubConnectionBuilder()
        .WithUrl($"{appUrl}/board?user={Uri.EscapeDataString(user)}", HttpTransportType.WebSockets);
    if (messagePack)
        builder.AddMessagePackProtocol();
    var client = new Client(builder.Build(), user);
    foreach (var method in new[] { "welcome", "joined", "left", "private", "userMessage", "broadcast" })
        client.Connection.On(method, new[] { typeof(string), typeof(string) }, args => client.Record(method, args));
    client.Connection.On("groupMessage", new[] { typeof(string), typeof(string), typeof(string) },
                         args => client.Record("groupMessage", args));
    client.Connection.Closed += error => { client.ClosedWith.TrySetResult(error); return Task.CompletedTask; };
    await client.Connection.StartAsync().WaitAsync(timeout);
    return client;
}

// The positive barrier before an absence check (as tests/service/lib.mjs marker()): once the
// clients that must get a message got it, `sender` sends a marker to each recipient and this waits
// for it. The relay handles a message whole and delivers to one client in order, so a copy of
// the message wrongly sent to a recipient would have arrived before its marker.
async Task Marker(Client sender, params Client[] recipients)
{
    foreach (var r in recipients)
    {
        var text = $"marker-{++markers}";
        await sender.Connection.InvokeAsync("SendToConnection", r.Connection.ConnectionId, text).WaitAsync(timeout);
        await r.WaitFor(x => x.Method == "private" && x.Args[1] == text, $"the marker {text}", timeout);
    }
}

async Task StopAll(params Client[] clients)
{
    foreach (var c in clients)
        await c.Connection.DisposeAsync();
}

var scenarios = new List<(string, Func<Task>)>();
foreach (var messagePack in new[] { false, true })
{
    var protocol = messagePack ? "messagepack" : "json";
    scenarios.Add(($"dotnet {protocol}: calls, the welcome, a large answer", async () =>
    {
        var a = await Connect($"dn-echo-{protocol}", messagePack);
        try
        {
            Check.Equal(42, await a.Connection.InvokeAsync<int>("Add", 2, 40), "Add");
            Check.Equal("héllo", await a.Connection.InvokeAsync<string>("Echo", "héllo"), "Echo");
            Check.Equal(70000, (await a.Connection.InvokeAsync<string>("Repeat", "ab", 35000)).Length, "Repeat");
            await a.WaitFor(m => m.Method == "welcome" && m.Args[0] == a.Connection.ConnectionId, "the welcome", timeout);
        }
        finally { await StopAll(a); }
    }));
}

scenarios.Add(("dotnet a group send reaches exactly its members, JSON and MessagePack", async () =>
{
    var a = await Connect("dn-g-a", false);
    var b = await Connect("dn-g-b", true);
    var c = await Connect("dn-g-c", false);
    try
    {
        await a.Connection.InvokeAsync("AddToGroup", "dn-room");
        await b.Connection.InvokeAsync("AddToGroup", "dn-room");
        await c.Connection.InvokeAsync("SendToGroup", "dn-room", "hello dn");
        foreach (var m in new[] { a, b })
            await m.WaitFor(x => x.Method == "groupMessage" && x.Args[2] == "hello dn", "the group message", timeout);
        await b.Connection.InvokeAsync("RemoveFromGroup", "dn-room");
        await c.Connection.InvokeAsync("SendToGroup", "dn-room", "after leave");
        await a.WaitFor(x => x.Method == "groupMessage" && x.Args[2] == "after leave", "the second group message", timeout);
        await Marker(c, a, b, c);
        Check.True(!c.Got.Any(x => x.Method == "groupMessage"), "the non-member got the group message");
        Check.True(!b.Got.Any(x => x.Method == "groupMessage" && x.Args[2] == "after leave"), "b got a message after leaving");
        Check.Equal(1, a.Got.Count(x => x.Method == "groupMessage" && x.Args[2] == "hello dn"), "a's copies of the group message");
    }
    finally { await StopAll(a, b, c); }
}));

scenarios.Add(("dotnet a user with three connections gets Clients.User on all three", async () =>
{
    var mine = new[] { await Connect("dn-user", false), await Connect("dn-user", true), await Connect("dn-user", false) };
    var other = await Connect("dn-other", true);
    try
    {
        await other.Connection.InvokeAsync("SendToUser", "dn-user", "to dn-user");
        foreach (var c in mine)
            await c.WaitFor(x => x.Method == "userMessage" && x.Args[1] == "to dn-user", "the user message", timeout);
        await Marker(other, other);
        Check.True(!other.Got.Any(x => x.Method == "userMessage"), "the sender got the user message");
    }
    finally { await StopAll(mine.Append(other).ToArray()); }
}));

scenarios.Add(("dotnet AbortMe closes the caller", async () =>
{
    var a = await Connect("dn-abort", true);
    try
    {
        try { await a.Connection.InvokeAsync("AbortMe"); } catch { /* the connection goes first */ }
        await a.ClosedWith.Task.WaitAsync(timeout);
    }
    finally { await StopAll(a); }
}));

return await Runner.Run(scenarios, TimeSpan.FromSeconds(60));

record Message(string Method, string?[] Args);

class Client
{
    public HubConnection Connection { get; }
    public string User { get; }
    public ConcurrentQueue<Message> Queue { get; } = new();
    public TaskCompletionSource<Exception?> ClosedWith { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly SemaphoreSlim _arrived = new(0);

    public Client(HubConnection connection, string user) { Connection = connection; User = user; }

    public IEnumerable<Message> Got => Queue.ToArray();

    public Task Record(string method, object?[] args)
    {
        Queue.Enqueue(new Message(method, args.Select(a => a?.ToString()).ToArray()));
        _arrived.Release();
        return Task.CompletedTask;
    }

    public async Task WaitFor(Func<Message, bool> match, string what, TimeSpan timeout)
    {
        var deadline = DateTime.UtcNow + timeout;
        while (!Queue.Any(match))
        {
            var left = deadline - DateTime.UtcNow;
            if (left <= TimeSpan.Zero || !await _arrived.WaitAsync(left))
                if (!Queue.Any(match))
                    throw new CheckFailed($"{User}: no {what}; got {string.Join(", ", Queue.Select(m => m.Method))}");
        }
    }
}
