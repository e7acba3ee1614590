// A hub behind [Authorize]: negotiate and connect both need the test token, else 401.
using Microsoft.AspNetCore.Authorization;
using Microsoft.AspNetCore.SignalR;

namespace SignalrRelay.TestBackend;

[Authorize]
public sealed class SecureHub : Hub
{
    public override Task OnDisconnectedAsync(Exception? exception)
    {
        Observations.RecordDisconnect(Context.ConnectionId, "secure", exception);
        return base.OnDisconnectedAsync(exception);
    }

    public object? Echo(object? value) => value;

    public Dictionary<string, object?> WhoAmI() => CallerInfo.Describe(Context, "secure");
}
