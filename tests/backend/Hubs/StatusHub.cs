// A small second hub, so that clients (and later legacy clients multiplexing several hubs on one
// connection) can be tested against more than one hub of the same backend.
using Microsoft.AspNetCore.SignalR;

namespace SignalrRelay.TestBackend;

public sealed class StatusHub : Hub
{
    private static int _connected;

    public override async Task OnConnectedAsync()
    {
        Interlocked.Increment(ref _connected);
        await Clients.Caller.SendAsync("status", new Dictionary<string, object?>
        {
            ["hub"] = "status",
            ["connectionId"] = Context.ConnectionId,
        });
        await base.OnConnectedAsync();
    }

    public override Task OnDisconnectedAsync(Exception? exception)
    {
        Interlocked.Decrement(ref _connected);
        Observations.RecordDisconnect(Context.ConnectionId, "status", exception);
        return base.OnDisconnectedAsync(exception);
    }

    public object? Echo(object? value) => value;

    public Dictionary<string, object?> GetStatus() => new()
    {
        ["hub"] = "status",
        ["connectionId"] = Context.ConnectionId,
        ["connected"] = Volatile.Read(ref _connected),
    };

    public Dictionary<string, object?> WhoAmI() => CallerInfo.Describe(Context, "status");
}
