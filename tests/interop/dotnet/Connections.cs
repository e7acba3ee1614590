// Builds stock HubConnections for the configured protocol and transport, and small helpers to
// wait for pushed events with timeouts.
using Microsoft.AspNetCore.Http.Connections;
using Microsoft.AspNetCore.Http.Connections.Client;
using Microsoft.AspNetCore.SignalR.Client;
using Microsoft.Extensions.DependencyInjection;

namespace SignalrRelay.InteropDotnet;

public sealed class Connections
{
    public static readonly TimeSpan Timeout = TimeSpan.FromSeconds(10);

    private readonly Env _env;

    public Connections(Env env) => _env = env;

    public HubConnection Build(string path, Action<HttpConnectionOptions>? configure = null, bool skipNegotiation = false,
                               TimeSpan[]? automaticReconnect = null)
    {
        // A path under SIGNALR_URL, or a whole URL (another server, e.g. one a scenario kills).
        string url = path.StartsWith("http://") || path.StartsWith("https://") ? path : _env.BaseUrl + path;
        var builder = new HubConnectionBuilder().WithUrl(url, options =>
        {
            options.Transports = skipNegotiation ? HttpTransportType.WebSockets : _env.Transport;
            options.SkipNegotiation = skipNegotiation;
            configure?.Invoke(options);
        });
        if (_env.Protocol == "messagepack")
            builder.AddMessagePackProtocol();
        if (automaticReconnect is not null)
            builder.WithAutomaticReconnect(automaticReconnect);
        var connection = builder.Build();
        // A Closed with an error is a failure of the scenario unless it called ExpectCloseError.
        connection.Closed += e =>
        {
            if (e is not null && !ExpectingCloseError.TryGetValue(connection, out _))
                lock (UnexpectedCloseErrors)
                    UnexpectedCloseErrors.Add($"{path}: {Check.Describe(e)}");
            return Task.CompletedTask;
        };
        return connection;
    }

    private static readonly System.Runtime.CompilerServices.ConditionalWeakTable<HubConnection, object> ExpectingCloseError = new();
    private static readonly List<string> UnexpectedCloseErrors = new();

    // The scenario expects `connection` to close with an error (the server or the relay ends it).
    public static void ExpectCloseError(HubConnection connection) => ExpectingCloseError.AddOrUpdate(connection, true);

    // The errors connections closed with since the last call that no scenario expected.
    public static List<string> TakeUnexpectedCloseErrors()
    {
        lock (UnexpectedCloseErrors)
        {
            var all = UnexpectedCloseErrors.ToList();
            UnexpectedCloseErrors.Clear();
            return all;
        }
    }

    // Starts a /chat connection; returns it with the backend's connection id from the "welcome"
    // push that ChatHub.OnConnectedAsync sends first.
    public async Task<(HubConnection Connection, string BackendId)> ConnectChat(
        string path = "/chat", Action<HttpConnectionOptions>? configure = null, bool skipNegotiation = false)
    {
        var connection = Build(path, configure, skipNegotiation);
        var welcome = NextEvent<string>(connection, "welcome");
        try
        {
            await connection.StartAsync().WaitAsync(Timeout);
            return (connection, await welcome.WaitAsync(Timeout));
        }
        catch
        {
            await connection.DisposeAsync();
            throw;
        }
    }

    // Completes with the argument of the next `name` event that satisfies `filter`.
    public static Task<T> NextEvent<T>(HubConnection connection, string name, Func<T, bool>? filter = null)
    {
        var received = new TaskCompletionSource<T>(TaskCreationOptions.RunContinuationsAsynchronously);
        IDisposable? subscription = null;
        subscription = connection.On<T>(name, value =>
        {
            if (filter is null || filter(value))
            {
                received.TrySetResult(value);
                subscription?.Dispose();
            }
        });
        return received.Task;
    }

    // Polls until `done` accepts a value, or fails after the timeout.
    public static Task<T> PollUntil<T>(Func<Task<T>> probe, Func<T, bool> done, string what) =>
        Wait.PollUntil(probe, done, what, Timeout);

    public static string UniqueName(string prefix) =>
        $"{prefix}-{Environment.ProcessId}-{Guid.NewGuid():N}";
}
