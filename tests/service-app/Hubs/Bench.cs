// The hub the benchmarks load through service mode (scripts/bench, signalr-loadgen), at /bench
// (hub key `bench`): the same methods and client targets as tests/backend's ChatHub uses for
// its benchmark rows, so service mode and ASP.NET Core direct run the same scenario. Nothing is
// sent on connect or disconnect (Board's joined/left would make every connect a broadcast).
using Microsoft.AspNetCore.SignalR;

namespace SignalrRelay.ServiceApp;

public sealed class Bench : Hub
{
    public object? Echo(object? value) => value;

    // -> all "broadcast"(message)
    public Task Broadcast(string message) => Clients.All.SendAsync("broadcast", message);

    public Task JoinGroup(string group) => Groups.AddToGroupAsync(Context.ConnectionId, group);

    public Task LeaveGroup(string group) => Groups.RemoveFromGroupAsync(Context.ConnectionId, group);

    // -> group members "groupMessage"(group, message)
    public Task SendToGroup(string group, string message) =>
        Clients.Group(group).SendAsync("groupMessage", group, message);

    // Puts the caller into `count` groups prefix0..prefix{count-1} (each add waits for the
    // service's ack; up to 256 in flight): a hub that holds many groups, for the disconnect
    // benchmark. Returns the count.
    public async Task<int> JoinGroups(string prefix, int count)
    {
        var pending = new List<Task>(256);
        for (int i = 0; i < count; i++)
        {
            pending.Add(Groups.AddToGroupAsync(Context.ConnectionId, prefix + i));
            if (pending.Count == 256)
            {
                await Task.WhenAll(pending);
                pending.Clear();
            }
        }
        await Task.WhenAll(pending);
        return count;
    }
}
