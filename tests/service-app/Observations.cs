// Process-wide record of what the hubs observed (connects, disconnects, streams), so a test can
// ask the app afterwards, through a hub method or GET /test/..., whether the SDK really ran
// OnConnectedAsync / OnDisconnectedAsync for a connection. Test-only state; thread-safe.
using System.Collections.Concurrent;

namespace SignalrRelay.ServiceApp;

// Event: "connected" or "disconnected". Error: the exception message OnDisconnectedAsync got.
public sealed record HubEvent(long Seq, string Event, string Hub, string ConnectionId, string? UserId,
                              string? Error, DateTimeOffset At);

public static class Observations
{
    private static readonly ConcurrentQueue<HubEvent> Log = new();
    private static readonly ConcurrentDictionary<string, (string Hub, string? UserId)> LiveConnections = new();
    private static readonly ConcurrentDictionary<string, string> StreamStatusByConnection = new();
    private static long _seq;
    private static int _streamsCompleted;
    private static int _streamsCancelled;

    public static void Connected(string hub, string connectionId, string? userId)
    {
        LiveConnections[connectionId] = (hub, userId);
        Add("connected", hub, connectionId, userId, null);
    }

    public static void Disconnected(string hub, string connectionId, string? userId, Exception? error)
    {
        LiveConnections.TryRemove(connectionId, out _);
        Add("disconnected", hub, connectionId, userId, error?.Message);
    }

    private static void Add(string ev, string hub, string connectionId, string? userId, string? error)
    {
        Log.Enqueue(new HubEvent(Interlocked.Increment(ref _seq), ev, hub, connectionId, userId, error,
                                 DateTimeOffset.UtcNow));
        // Bounded: a long test run must not grow without limit.
        while (Log.Count > 10000 && Log.TryDequeue(out _))
        {
        }
    }

    public static HubEvent[] Events(string? hub) =>
        Log.Where(e => hub is null || e.Hub == hub).OrderBy(e => e.Seq).ToArray();

    public static HubEvent[] EventsOf(string connectionId) =>
        Log.Where(e => e.ConnectionId == connectionId).OrderBy(e => e.Seq).ToArray();

    public static object ConnectedNow(string? hub) => LiveConnections
        .Where(kv => hub is null || kv.Value.Hub == hub)
        .Select(kv => new { connectionId = kv.Key, hub = kv.Value.Hub, userId = kv.Value.UserId })
        .ToArray();

    public static string[] ConnectedIds(string hub) =>
        LiveConnections.Where(kv => kv.Value.Hub == hub).Select(kv => kv.Key).ToArray();

    // status: "running", "completed" or "cancelled".
    public static void RecordStream(string connectionId, string status)
    {
        StreamStatusByConnection[connectionId] = status;
        if (status == "completed") Interlocked.Increment(ref _streamsCompleted);
        if (status == "cancelled") Interlocked.Increment(ref _streamsCancelled);
    }

    public static string StreamStatusOf(string connectionId) =>
        StreamStatusByConnection.TryGetValue(connectionId, out var s) ? s : "none";

    public static object StreamSummary() => new
    {
        completed = Volatile.Read(ref _streamsCompleted),
        cancelled = Volatile.Read(ref _streamsCancelled),
    };
}
