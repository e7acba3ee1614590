// Runs the legacy scenarios with the stock ASP.NET SignalR 2.x .NET client
// (Microsoft.AspNet.SignalR.Client 2.4.2, WebSockets by default) against SIGNALR_LEGACY_URL, one
// line per scenario, then "N passed, M failed"; exit code 1 if anything failed or nothing ran.
//   SIGNALR_LEGACY_URL    the legacy endpoint, e.g. http://127.0.0.1:8080/signalr (required)
//   SIGNALR_LEGACY_ONLY   optional substring: run only scenarios whose name contains it
//   SIGNALR_LEGACY_TRANSPORT  webSockets (default) | serverSentEvents | longPolling | auto
//   SIGNALR_LEGACY_SERVER=reference  the server is the real 2.x server (tests/legacy-ref):
//                         hub connection ids are the legacy GUID, shared by all hubs
//   SIGNALR_LEGACY_TRACE=1  the client's own trace (all levels) on stderr
//   SIGNALR_LEGACY_INSTANCES=PORT,PORT,...  run Instances.cs (several backend instances) instead
using SignalrRelay.LegacyDotnet;

string url = (Environment.GetEnvironmentVariable("SIGNALR_LEGACY_URL") ?? "").TrimEnd('/');
if (url.Length == 0 || !Uri.TryCreate(url, UriKind.Absolute, out var parsed) || parsed.Scheme is not ("http" or "https"))
{
    Console.Error.WriteLine("SIGNALR_LEGACY_URL must be the legacy endpoint, e.g. http://127.0.0.1:8080/signalr");
    return 2;
}
string? only = Environment.GetEnvironmentVariable("SIGNALR_LEGACY_ONLY") is { Length: > 0 } o ? o : null;

// SIGNALR_LEGACY_INSTANCES: the several-instances scenarios instead (Instances.cs).
string? instancePorts = Environment.GetEnvironmentVariable("SIGNALR_LEGACY_INSTANCES") is { Length: > 0 } ip ? ip : null;
var scenarios = (instancePorts is null ? new Scenarios(url).All()
        : new Instances(url, instancePorts, Environment.GetEnvironmentVariable("SIGNALR_LEGACY_VICTIM_PID")).All())
    .Where(s => only is null || s.Name.Contains(only, StringComparison.OrdinalIgnoreCase))
    .ToList();

Console.WriteLine($"legacy .NET client (Microsoft.AspNet.SignalR.Client {typeof(Microsoft.AspNet.SignalR.Client.HubConnection).Assembly.GetName().Version}, {LegacyClient.TransportName}) against {url}");

// Something must answer a negotiate before any scenario is worth a try; if nothing does, every
// scenario fails at once with the reason instead of each waiting for its own timeout.
string? unavailable = await Probe(url);
if (unavailable is not null)
    Console.WriteLine($"# {unavailable}");

// What the clients reported (Connection.Error) must be empty unless the scenario expects errors.
return await Runner.Run(scenarios, TimeSpan.FromSeconds(90), unavailable: unavailable, afterEach: () =>
    Check.Empty(LegacyClient.TakeCreated().Where(c => !c.ExpectErrors).SelectMany(c => c.Errors()),
                "errors the clients reported (Connection.Error)"));

// GET <url>/negotiate as the client would send it; null if a legacy negotiate came back.
static async Task<string?> Probe(string url)
{
    using var http = new HttpClient { Timeout = TimeSpan.FromSeconds(5) };
    string negotiate = $"{url}/negotiate?clientProtocol=2.1&connectionData={Uri.EscapeDataString("[{\"Name\":\"ChatHub\"}]")}";
    try
    {
        using var response = await http.GetAsync(negotiate);
        string body = await response.Content.ReadAsStringAsync();
        if ((int)response.StatusCode != 200)
            return $"GET {negotiate} answered {(int)response.StatusCode}: not a legacy SignalR endpoint ({body[..Math.Min(body.Length, 200)]})";
        Console.WriteLine($"# negotiate: {body[..Math.Min(body.Length, 400)]}");
        return null;
    }
    catch (Exception e)
    {
        string why = e is TaskCanceledException ? "no answer within 5 s" : (e.InnerException?.Message ?? e.Message);
        return $"no legacy SignalR server answers at {url} (GET negotiate: {why}); start the relay and set SIGNALR_LEGACY_URL to its /signalr endpoint";
    }
}
