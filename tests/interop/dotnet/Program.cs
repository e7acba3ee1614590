// Runs every interop scenario with the stock .NET SignalR client against SIGNALR_URL, one line per
// scenario, then "N passed, M failed"; exit code 1 if anything failed.
//   SIGNALR_URL        base URL, hubs at /chat, /status, /secure (required)
//   SIGNALR_PROTOCOL   json (default) | messagepack
//   SIGNALR_TRANSPORT  WebSockets (default) | ServerSentEvents | LongPolling
//   SIGNALR_DIRECT=1   no relay in between: also check what only holds without one
//   SIGNALR_ONLY       optional substring: run only scenarios whose name contains it
using SignalrRelay.InteropDotnet;

Env env;
try
{
    env = Env.FromEnvironment();
}
catch (ArgumentException e)
{
    Console.Error.WriteLine(e.Message);
    return 2;
}

Console.WriteLine($"dotnet client: {env.BaseUrl} protocol={env.Protocol} transport={env.TransportName}");
var scenarios = new Scenarios(env).All()
    .Where(s => env.Only is null || s.Name.Contains(env.Only, StringComparison.OrdinalIgnoreCase))
    .ToList();

// No connection may have closed with an error the scenario did not expect.
return await Runner.Run(scenarios, TimeSpan.FromSeconds(60), afterEach: () =>
    Check.Empty(Connections.TakeUnexpectedCloseErrors(), "errors connections closed with (HubConnection.Closed)"));
