// The main hub of the service-mode tests, at /board. The class is named `Board` on purpose: the
// SDK's hub key is the class name lower-cased, so the client redirect is `/client/?hub=board`,
// the same word as the path (OpsHub is the counter-example: path /ops, hub key `opshub`).
// Every kind of send the SDK turns into a service message has a method here:
//   Caller -> 7, Client(s) -> 7, User -> 8, Users -> 9, All/AllExcept/Others -> 10,
//   Group/GroupExcept/OthersInGroup -> 13, Groups -> 14, Groups.Add/Remove -> 18/19 (+Ack 20),
//   return values / stream items / handshake answer -> 6, Context.Abort -> 6 (Close) + 5.
using System.Runtime.CompilerServices;
using System.Threading.Channels;
using Microsoft.AspNetCore.SignalR;

namespace SignalrRelay.ServiceApp;

public sealed class Board : Hub
{
    public const string Name = "board";

    // welcome(connectionId, userId) to the caller; joined(connectionId, userId) to the others.
    public override async Task OnConnectedAsync()
    {
        Observations.Connected(Name, Context.ConnectionId, Context.UserIdentifier);
        await Clients.Caller.SendAsync("welcome", Context.ConnectionId, Context.UserIdentifier);
        await Clients.Others.SendAsync("joined", Context.ConnectionId, Context.UserIdentifier);
        await base.OnConnectedAsync();
    }

    // left(connectionId, userId) to everyone else. Observed after the send, so that a test which saw
    // the disconnect at /test/connections knows the "left" is already on its way to the service.
    public override async Task OnDisconnectedAsync(Exception? exception)
    {
        try
        {
            await Clients.Others.SendAsync("left", Context.ConnectionId, Context.UserIdentifier);
        }
        finally
        {
            Observations.Disconnected(Name, Context.ConnectionId, Context.UserIdentifier, exception);
        }
        await base.OnDisconnectedAsync(exception);
    }

    // ---- plain calls (answered with a Completion in a ConnectionData) ----

    // `object` binds to JsonElement with JSON and to plain values with MessagePack; both
    // serialize back to the same value.
    public object? Echo(object? value) => value;

    public int Add(int a, int b) => a + b;

    // `count` copies of `text`: a big answer (the SDK splits big messages over several frames).
    public string Repeat(string text, int count) => string.Concat(Enumerable.Repeat(text, count));

    public void Fail(string message) => throw new HubException(message);

    public Dictionary<string, object?> WhoAmI() => CallerInfo.Describe(Context, Name);

    // The app's record of connects/disconnects of one connection (default: the caller).
    public HubEvent[] GetEvents(string? connectionId = null) =>
        Observations.EventsOf(connectionId ?? Context.ConnectionId);

    // Connection ids connected to /board right now, as the app sees them.
    public string[] GetConnected() => Observations.ConnectedIds(Name);

    // The app closes the caller: the SDK sends a Close hub message then CloseConnection (5).
    public void AbortMe() => Context.Abort();

    // ---- sends; the receiving client method and its arguments are given per method ----

    // -> Caller "private"(from, message)
    public Task SendToCaller(string message) =>
        Clients.Caller.SendAsync("private", Context.ConnectionId, message);

    // -> that connection "private"(from, message)
    public Task SendToConnection(string connectionId, string message) =>
        Clients.Client(connectionId).SendAsync("private", Context.ConnectionId, message);

    // -> those connections "private"(from, message)
    public Task SendToConnections(string[] connectionIds, string message) =>
        Clients.Clients(connectionIds).SendAsync("private", Context.ConnectionId, message);

    // -> every connection of that user "userMessage"(from, message)
    public Task SendToUser(string userId, string message) =>
        Clients.User(userId).SendAsync("userMessage", Context.ConnectionId, message);

    // -> every connection of those users "userMessage"(from, message)
    public Task SendToUsers(string[] userIds, string message) =>
        Clients.Users(userIds).SendAsync("userMessage", Context.ConnectionId, message);

    // -> all "broadcast"(from, message)
    public Task SendToAll(string message) =>
        Clients.All.SendAsync("broadcast", Context.ConnectionId, message);

    // -> all but the caller "broadcast"(from, message)
    public Task SendToOthers(string message) =>
        Clients.Others.SendAsync("broadcast", Context.ConnectionId, message);

    // -> all but those connections "broadcast"(from, message)
    public Task SendToAllExcept(string[] excludedConnectionIds, string message) =>
        Clients.AllExcept(excludedConnectionIds).SendAsync("broadcast", Context.ConnectionId, message);

    // Groups.AddToGroupAsync: waits for the service's Ack (fails after 10 s without one).
    public Task AddToGroup(string group) => Groups.AddToGroupAsync(Context.ConnectionId, group);

    public Task RemoveFromGroup(string group) => Groups.RemoveFromGroupAsync(Context.ConnectionId, group);

    // AddToGroup, timed: [when this hub method began (Unix ms), how long the service took to ack
    // (ms)]. tests/service/bench/join-storm.mjs splits a join's time with it: to the app, the
    // service's ack, back to the client.
    public async Task<long[]> AddToGroupTimed(string group)
    {
        long began = DateTimeOffset.UtcNow.ToUnixTimeMilliseconds();
        var watch = System.Diagnostics.Stopwatch.StartNew();
        await Groups.AddToGroupAsync(Context.ConnectionId, group);
        return new[] { began, watch.ElapsedMilliseconds };
    }

    // Another connection into/out of a group (its id from welcome/joined).
    public Task AddConnectionToGroup(string connectionId, string group) =>
        Groups.AddToGroupAsync(connectionId, group);

    public Task RemoveConnectionFromGroup(string connectionId, string group) =>
        Groups.RemoveFromGroupAsync(connectionId, group);

    // -> group members "groupMessage"(group, from, message)
    public Task SendToGroup(string group, string message) =>
        Clients.Group(group).SendAsync("groupMessage", group, Context.ConnectionId, message);

    // -> group members but those connections "groupMessage"(group, from, message)
    public Task SendToGroupExcept(string group, string[] excludedConnectionIds, string message) =>
        Clients.GroupExcept(group, excludedConnectionIds)
            .SendAsync("groupMessage", group, Context.ConnectionId, message);

    // -> group members but the caller "groupMessage"(group, from, message)
    public Task SendToOthersInGroup(string group, string message) =>
        Clients.OthersInGroup(group).SendAsync("groupMessage", group, Context.ConnectionId, message);

    // -> members of any of the groups, once each "groupMessage"("*", from, message)
    public Task SendToGroups(string[] groups, string message) =>
        Clients.Groups(groups).SendAsync("groupMessage", "*", Context.ConnectionId, message);

    // ---- streams ----

    // Server->client stream 0..count-1, one item every delayMs; records completed/cancelled.
    public async IAsyncEnumerable<int> Counter(int count, int delayMs,
                                               [EnumeratorCancellation] CancellationToken cancellationToken)
    {
        string connectionId = Context.ConnectionId;
        bool completed = false;
        Observations.RecordStream(connectionId, "running");
        try
        {
            for (int i = 0; i < count; i++)
            {
                cancellationToken.ThrowIfCancellationRequested();
                yield return i;
                if (delayMs > 0)
                    await Task.Delay(delayMs, cancellationToken);
            }
            completed = true;
        }
        finally
        {
            Observations.RecordStream(connectionId, completed ? "completed" : "cancelled");
        }
    }

    // The same with a ChannelReader<int>.
    public ChannelReader<int> CounterChannel(int count, int delayMs, CancellationToken cancellationToken)
    {
        var channel = Channel.CreateUnbounded<int>();
        _ = Task.Run(async () =>
        {
            Exception? error = null;
            try
            {
                for (int i = 0; i < count; i++)
                {
                    await channel.Writer.WriteAsync(i, cancellationToken);
                    if (delayMs > 0)
                        await Task.Delay(delayMs, cancellationToken);
                }
            }
            catch (Exception e)
            {
                error = e;
            }
            channel.Writer.TryComplete(error);
        }, CancellationToken.None);
        return channel.Reader;
    }

    // Status of the last Counter stream this connection started: none|running|completed|cancelled.
    public string GetStreamStatus() => Observations.StreamStatusOf(Context.ConnectionId);

    // Client->server upload stream.
    public async Task<long> Sum(IAsyncEnumerable<int> numbers)
    {
        long total = 0;
        await foreach (int n in numbers)
            total += n;
        return total;
    }

    // Client results: asks the caller ("GetAnswer"(question)) and returns what it answered
    // (service messages 34/35/36 when the caller is served through the service).
    public Task<string> AskCaller(string question) =>
        Clients.Caller.InvokeAsync<string>("GetAnswer", question, Context.ConnectionAborted);
}
