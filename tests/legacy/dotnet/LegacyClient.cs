// One stock legacy HubConnection (Microsoft.AspNet.SignalR.Client 2.4.2) with its hub proxies,
// a record of every server->client call it received and of its connection events, and waits
// with timeouts so that a missing message fails a scenario instead of hanging it.
using System.Diagnostics;
using Microsoft.AspNet.SignalR.Client;
using Microsoft.AspNet.SignalR.Client.Transports;
using Newtonsoft.Json.Linq;

namespace SignalrRelay.LegacyDotnet;

public sealed record HubEvent(string Hub, string Name, IReadOnlyList<JToken> Args);

public sealed class LegacyClient : IAsyncDisposable
{
    public static readonly TimeSpan Timeout = TimeSpan.FromSeconds(10);

    private readonly Dictionary<string, IHubProxy> _proxies = new(StringComparer.OrdinalIgnoreCase);
    private readonly List<HubEvent> _events = new();
    private readonly List<string> _errors = new();
    private int _reconnecting, _reconnected, _closed;

    public HubConnection Connection { get; }
    public string? BackendId { get; private set; }

    public int ReconnectingCount => Volatile.Read(ref _reconnecting);
    public int ReconnectedCount => Volatile.Read(ref _reconnected);
    public int ClosedCount => Volatile.Read(ref _closed);

    // hubs: hub name -> event names to record. The .NET client lists every proxy in its
    // connectionData ([{"Name":"ChatHub"}, ...]) whether or not it has handlers.
    public LegacyClient(string url, IReadOnlyDictionary<string, string[]> hubs)
    {
        // useDefaultUrl: false, or the client appends "/signalr" to the URL it is given.
        Connection = new HubConnection(url, useDefaultUrl: false);
        if (Environment.GetEnvironmentVariable("SIGNALR_LEGACY_TRACE") == "1")
        {
            Connection.TraceLevel = TraceLevels.All;
            Connection.TraceWriter = Console.Error;
        }
        foreach (var (hub, events) in hubs)
        {
            var proxy = Connection.CreateHubProxy(hub);
            _proxies[hub] = proxy;
            foreach (string name in events)
            {
                string hubName = hub, eventName = name;
                proxy.Subscribe(eventName).Received += args =>
                {
                    lock (_events)
                        _events.Add(new HubEvent(hubName, eventName, args.ToList()));
                };
            }
        }
        Connection.Reconnecting += () => Interlocked.Increment(ref _reconnecting);
        Connection.Reconnected += () => Interlocked.Increment(ref _reconnected);
        Connection.Closed += () => Interlocked.Increment(ref _closed);
        Connection.Error += e => { lock (_errors) _errors.Add($"{e.GetType().Name}: {e.Message}"); };
    }

    public static readonly IReadOnlyDictionary<string, string[]> ChatEvents = new Dictionary<string, string[]>
    {
        ["ChatHub"] = new[] { "welcome", "broadcast", "groupMessage" },
    };

    // The transport every connection uses: SIGNALR_LEGACY_TRANSPORT = webSockets (default),
    // serverSentEvents, longPolling, or auto (the client's own choice, WebSockets first with
    // fallback; any transport is then accepted).
    public static readonly string TransportName = Environment.GetEnvironmentVariable("SIGNALR_LEGACY_TRANSPORT") is { Length: > 0 } t ? t : "webSockets";

    private static IClientTransport NewTransport() => TransportName.ToLowerInvariant() switch
    {
        "websockets" => new WebSocketTransport(),
        "serversentevents" => new ServerSentEventsTransport(),
        "longpolling" => new LongPollingTransport(),
        "auto" => new AutoTransport(new Microsoft.AspNet.SignalR.Client.Http.DefaultHttpClient()),
        _ => throw new CheckFailed($"SIGNALR_LEGACY_TRANSPORT={TransportName}: expected webSockets, serverSentEvents, longPolling or auto"),
    };

    // Connects over the chosen transport and waits for ChatHub's welcome push (when ChatHub is a proxy).
    public static async Task<LegacyClient> Connect(string url, IReadOnlyDictionary<string, string[]>? hubs = null)
    {
        var client = new LegacyClient(url, hubs ?? ChatEvents);
        try
        {
            await client.Connection.Start(NewTransport()).WaitAsync(Timeout);
            Check.Equal(ConnectionState.Connected, client.Connection.State, "state after Start");
            if (!TransportName.Equals("auto", StringComparison.OrdinalIgnoreCase))
                Check.Equal(TransportName.ToLowerInvariant(), client.Connection.Transport?.Name.ToLowerInvariant(), "transport");
            if (client._proxies.ContainsKey("ChatHub"))
            {
                var welcome = await client.WaitForEvents("ChatHub", "welcome", 1);
                Check.Equal(1, welcome[0].Args.Count, "welcome arguments");
                client.BackendId = welcome[0].Args[0].Value<string>();
            }
            return client;
        }
        catch
        {
            await client.DisposeAsync();
            throw;
        }
    }

    public IHubProxy Hub(string name) => _proxies[name];

    public Task<T> Invoke<T>(string hub, string method, params object?[] args) =>
        _proxies[hub].Invoke<T>(method, args!).WaitAsync(Timeout);

    public Task Invoke(string hub, string method, params object?[] args) =>
        _proxies[hub].Invoke(method, args!).WaitAsync(Timeout);

    public List<HubEvent> Events(string hub, string name)
    {
        lock (_events)
            return _events.Where(e => e.Hub == hub && e.Name == name).ToList();
    }

    public List<string> Errors()
    {
        lock (_errors)
            return _errors.ToList();
    }

    // Waits until `count` calls of hub.name (matching filter) have arrived and returns them.
    public async Task<List<HubEvent>> WaitForEvents(string hub, string name, int count,
                                                    Func<HubEvent, bool>? filter = null, TimeSpan? timeout = null)
    {
        var clock = Stopwatch.StartNew();
        var limit = timeout ?? Timeout;
        while (true)
        {
            var seen = Events(hub, name).Where(filter ?? (_ => true)).ToList();
            if (seen.Count >= count)
                return seen;
            if (clock.Elapsed > limit)
                throw new CheckFailed($"timed out after {limit.TotalSeconds} s waiting for {count} x {hub}.{name}; " +
                                      $"got {seen.Count}; state {Connection.State}; errors [{string.Join("; ", Errors())}]");
            await Task.Delay(10);
        }
    }

    public static async Task WaitUntil(Func<bool> condition, string what, TimeSpan? timeout = null)
    {
        var clock = Stopwatch.StartNew();
        var limit = timeout ?? Timeout;
        while (!condition())
        {
            if (clock.Elapsed > limit)
                throw new CheckFailed($"timed out after {limit.TotalSeconds} s waiting for {what}");
            await Task.Delay(10);
        }
    }

    // Stop(): POST /abort, then wait until the server has closed the transport. The client blocks
    // up to the given timeout for that; returns how long it took.
    public async Task<TimeSpan> Stop(TimeSpan blockAtMost)
    {
        var clock = Stopwatch.StartNew();
        await Task.Run(() => Connection.Stop(blockAtMost)).WaitAsync(blockAtMost + TimeSpan.FromSeconds(5));
        return clock.Elapsed;
    }

    public async ValueTask DisposeAsync()
    {
        if (Connection.State == ConnectionState.Disconnected)
            return;
        try
        {
            await Stop(TimeSpan.FromSeconds(2));
        }
        catch (Exception)
        {
            // best effort at the end of a scenario
        }
    }
}
