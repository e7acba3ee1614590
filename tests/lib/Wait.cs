// Bounded waits for the .NET scenario runners (linked into tests/interop/dotnet and
// tests/legacy/dotnet like Check.cs): wait for an observable condition (the backend's record, a
// client event count) rather than sleep a fixed time, and fail with what was awaited.
using System.Diagnostics;

namespace SignalrRelay.Testing;

public static class Wait
{
    public static readonly TimeSpan DefaultTimeout = TimeSpan.FromSeconds(10);

    // Polls `probe` until `done` accepts its value and returns it; probes at least once and once
    // more at the deadline, then fails with the last value.
    public static async Task<T> PollUntil<T>(Func<Task<T>> probe, Func<T, bool> done, string what,
                                             TimeSpan? timeout = null, int everyMs = 50)
    {
        var limit = timeout ?? DefaultTimeout;
        var clock = Stopwatch.StartNew();
        while (true)
        {
            T last = await probe();
            if (done(last))
                return last;
            if (clock.Elapsed >= limit)
                throw new CheckFailed($"timed out after {limit.TotalSeconds} s waiting for {what}; last value {Check.Show(last)}");
            await Task.Delay(everyMs);
        }
    }

    public static Task Until(Func<bool> condition, string what, TimeSpan? timeout = null, int everyMs = 10) =>
        PollUntil(() => Task.FromResult(condition()), ok => ok, what, timeout, everyMs);
}
