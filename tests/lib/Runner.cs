// The scenario loop of the .NET runners (tests/interop/dotnet, tests/legacy/dotnet): one line per
// scenario, "PASS name (ms)" or "FAIL name (ms): why", then "N passed, M failed", which
// scripts/lib/suite.sh reads. Each scenario is bounded in time (a stuck one fails with its name
// and the run goes on), and after each one `afterEach` may fail it (the errors its clients
// reported that it did not expect). Exit code 0 only when something ran and nothing failed.
using System.Diagnostics;

namespace SignalrRelay.Testing;

public static class Runner
{
    public static async Task<int> Run(IEnumerable<(string Name, Func<Task> Run)> scenarios, TimeSpan perScenario,
                                      Action? afterEach = null, string? unavailable = null)
    {
        int passed = 0, failed = 0;
        foreach (var (name, run) in scenarios)
        {
            var clock = Stopwatch.StartNew();
            try
            {
                if (unavailable is not null)
                    throw new CheckFailed(unavailable);
                try
                {
                    await run().WaitAsync(perScenario);
                }
                catch (TimeoutException) when (clock.Elapsed >= perScenario)
                {
                    throw new CheckFailed($"TIMED OUT: the scenario did not finish within {perScenario.TotalSeconds} s");
                }
                afterEach?.Invoke();
                passed++;
                Console.WriteLine($"PASS {name} ({clock.ElapsedMilliseconds} ms)");
            }
            catch (Exception e)
            {
                failed++;
                try
                {
                    afterEach?.Invoke(); // resets what it collected, so the next scenario starts clean
                }
                catch (Exception)
                {
                    // reported with the scenario's own failure below
                }
                Console.WriteLine($"FAIL {name} ({clock.ElapsedMilliseconds} ms): {Check.Describe(e)}");
            }
        }
        Console.WriteLine($"{passed} passed, {failed} failed");
        return failed == 0 && passed > 0 ? 0 : 1;
    }
}
