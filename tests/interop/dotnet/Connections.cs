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

    public HubConnection Build(string path, Action<HttpConnectionOptions>? configure = null, bool skipNegotiation = false)
    {
        var builder = new HubConnectionBuilder().WithUrl(_env.BaseUrl + path, options =>
        {
            options.Transports = skipNegotiation ? HttpTransportType.WebSockets : _env.Transport;
            options.SkipNegotiation = skipNegotiation;
            configure?.Invoke(options);
        });
        if (_env.Protocol == "messagepack")
            builder.AddMessagePackProtocol();
        return builder.Build();
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
    public static async Task<T> PollUntil<T>(Func<Task<T>> probe, Func<T, bool> done, string what)
    {
        var deadline = DateTime.UtcNow + Timeout;
        T last;
        do
        {
            last = await probe();
            if (done(last))
                return last;
            await Task.Delay(50);
        } while (DateTime.UtcNow < deadline);
        throw new CheckFailed($"timed out waiting for {what}; last value {Check.Show(last)}");
    }

    public static string UniqueName(string prefix) =>
        $"{prefix}-{Environment.ProcessId}-{Guid.NewGuid():N}";
}
