// The main hub the relay is tested with: echo of every value type, several arguments, void and
// failing methods, broadcast and groups, streaming both ways, client results, server abort, and
// introspection (who the server thinks the caller is, what it saw of disconnects and streams).
using System.Runtime.CompilerServices;
using Microsoft.AspNetCore.SignalR;

namespace SignalrRelay.TestBackend;

public sealed class ChatHub : Hub
{
    public override async Task OnConnectedAsync()
    {
        await Clients.Caller.SendAsync("welcome", Context.ConnectionId);
        await base.OnConnectedAsync();
    }

    public override Task OnDisconnectedAsync(Exception? exception)
    {
        Observations.RecordDisconnect(Context.ConnectionId, "chat", exception);
        return base.OnDisconnectedAsync(exception);
    }

    // `object` binds to JsonElement with the JSON protocol and to plain primitives, object[] and
    // Dictionary<object, object> with MessagePack; both serialize back to the same value.
    public object? Echo(object? value) => value;

    public object?[] EchoMany(object? a, object? b, object? c) => new[] { a, b, c };

    public int Add(int a, int b) => a + b;

    // `count` copies of `text`: lets a test make the server send far more than the client sent.
    public string Repeat(string text, int count) => string.Concat(Enumerable.Repeat(text, count));

    public void VoidMethod()
    {
    }

    public void ThrowHubException(string message) => throw new HubException(message);

    public void ThrowOther() => throw new InvalidOperationException("this text must not reach the client");

    public Task Broadcast(string message) => Clients.All.SendAsync("broadcast", message);

    public Task JoinGroup(string group) => Groups.AddToGroupAsync(Context.ConnectionId, group);

    public Task LeaveGroup(string group) => Groups.RemoveFromGroupAsync(Context.ConnectionId, group);

    public Task SendToGroup(string group, string message) =>
        Clients.Group(group).SendAsync("groupMessage", group, message);

    // Server->client stream: 0..count-1, one item every delayMs. Records on the way out whether
    // it ran to the end or was cancelled (client CancelInvocation or connection loss).
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

    // Client results (.NET 7+): asks the caller and returns what it answered.
    public async Task<string> AskClient()
    {
        return await Clients.Caller.InvokeAsync<string>("GetName", "backend-asks", Context.ConnectionAborted);
    }

    public void AbortMe() => Context.Abort();

    public Dictionary<string, object?> WhoAmI() => CallerInfo.Describe(Context, "chat");

    public Dictionary<string, object?> RequestDetails() => CallerInfo.DescribeRequest(Context);

    public Dictionary<string, object?> GetDisconnectInfo(string connectionId) =>
        CallerInfo.DescribeDisconnect(connectionId);

    public int GetDisconnectCount() => Observations.DisconnectCount;
}
