// Second hub, at /ops, for tests of several hubs on one app and of authorization. The class name
// gives the SDK hub key `opshub` (different from the path on purpose: the relay must route by
// the `hub` query value, not by asrs.op). The whole hub needs an authenticated user, so the app's
// negotiate answers 401 without `?user=` / a bearer name.
using Microsoft.AspNetCore.Authorization;
using Microsoft.AspNetCore.SignalR;

namespace SignalrRelay.ServiceApp;

[Authorize]
public sealed class OpsHub : Hub
{
    public const string Name = "ops";

    public override Task OnConnectedAsync()
    {
        Observations.Connected(Name, Context.ConnectionId, Context.UserIdentifier);
        return base.OnConnectedAsync();
    }

    public override Task OnDisconnectedAsync(Exception? exception)
    {
        Observations.Disconnected(Name, Context.ConnectionId, Context.UserIdentifier, exception);
        return base.OnDisconnectedAsync(exception);
    }

    public string Ping() => "pong";

    public Dictionary<string, object?> WhoAmI() => CallerInfo.Describe(Context, Name);

    // Needs role claim "admin" as the app sees it: the claim must arrive with type
    // ClaimTypes.Role, i.e. the relay maps the token's short `role` back (spec appendix A.11).
    [Authorize(Roles = "admin")]
    public string AdminOnly() => "admin ok";

    // -> all /ops clients "opsMessage"(fromUser, message)
    public Task Notify(string message) => Clients.All.SendAsync("opsMessage", Context.UserIdentifier, message);

    // -> the user's /ops connections "opsMessage"(fromUser, message)
    public Task NotifyUser(string userId, string message) =>
        Clients.User(userId).SendAsync("opsMessage", Context.UserIdentifier, message);
}
