// Process-wide record of what the hubs observed (disconnects, stream endings), so a test can ask
// the backend afterwards, through a hub method or GET /test/..., whether the server really ran
// OnDisconnectedAsync or really saw a stream cancelled. Test-only state; thread-safe.
using System.Collections.Concurrent;

namespace SignalrRelay.TestBackend;

public sealed record DisconnectRecord(string ConnectionId, string Hub, string? Error, DateTimeOffset At);

public static class Observations
{
    private static readonly ConcurrentDictionary<string, DisconnectRecord> Disconnects = new();
    private static readonly ConcurrentDictionary<string, string> StreamStatusByConnection = new();
    private static int _disconnectCount;
    private static int _streamsCompleted;
    private static int _streamsCancelled;
    private static string _lastStreamStatus = "none";

    public static void RecordDisconnect(string connectionId, string hub, Exception? error)
    {
        Disconnects[connectionId] = new DisconnectRecord(connectionId, hub, error?.Message, DateTimeOffset.UtcNow);
        Interlocked.Increment(ref _disconnectCount);
    }

    public static bool TryGetDisconnect(string connectionId, out DisconnectRecord? record)
    {
        bool found = Disconnects.TryGetValue(connectionId, out var r);
        record = r;
        return found;
    }

    public static int DisconnectCount => Volatile.Read(ref _disconnectCount);

    public static object DisconnectSummary() => new
    {
        count = DisconnectCount,
        connectionIds = Disconnects.Keys.ToArray(),
    };

    // status: "running", "completed" or "cancelled".
    public static void RecordStream(string connectionId, string status)
    {
        StreamStatusByConnection[connectionId] = status;
        Volatile.Write(ref _lastStreamStatus, status);
        if (status == "completed") Interlocked.Increment(ref _streamsCompleted);
        if (status == "cancelled") Interlocked.Increment(ref _streamsCancelled);
    }

    public static string StreamStatusOf(string connectionId) =>
        StreamStatusByConnection.TryGetValue(connectionId, out var s) ? s : "none";

    public static object StreamSummary() => new
    {
        last = Volatile.Read(ref _lastStreamStatus),
        completed = Volatile.Read(ref _streamsCompleted),
        cancelled = Volatile.Read(ref _streamsCancelled),
    };
}
