// Stateful reconnect (ASP.NET Core 8+, WithStatefulReconnect) with the stock .NET client: its
// TCP connection is cut mid-stream by a forwarder in the scenario (CuttingForwarder), another
// client makes the hub broadcast while it is away and it invokes the hub itself; then its next
// WebSocket (same connection token) gets through. Every broadcast must arrive exactly once and
// in order, the invocation made during the gap must complete, and the connection must be the same
// one: no Reconnecting, no Closed, the same ConnectionId, the backend's same connection.
// WebSockets only: the clients offer stateful reconnect on no other transport.
using System.Net;
using System.Net.Sockets;
using Microsoft.AspNetCore.SignalR.Client;

namespace SignalrRelay.InteropDotnet;

public static class StatefulReconnect
{
    private const int GapMessages = 20;
    private static readonly TimeSpan Long = TimeSpan.FromSeconds(30);

    public static async Task DropMidStream(Env env, Connections connections)
    {
        var target = new Uri(env.BaseUrl);
        await using var forwarder = new CuttingForwarder(target.Port);
        string url = $"http://127.0.0.1:{forwarder.Port}{target.AbsolutePath.TrimEnd('/')}/chat";
        var a = connections.Build(url, o => o.UseStatefulReconnect = true);
        await using var _a = a;
        var received = new List<string>();
        a.On<string>("broadcast", m => { lock (received) received.Add(m); });
        int reconnecting = 0, closed = 0;
        a.Reconnecting += _ => { Interlocked.Increment(ref reconnecting); return Task.CompletedTask; };
        a.Closed += _ => { Interlocked.Increment(ref closed); return Task.CompletedTask; };
        var welcome = Connections.NextEvent<string>(a, "welcome");
        await a.StartAsync().WaitAsync(Connections.Timeout);
        string backendId = await welcome.WaitAsync(Connections.Timeout);
        string? idBefore = a.ConnectionId;

        var (b, _) = await connections.ConnectChat();
        await using var _b = b;
        string tag = Connections.UniqueName("stateful");
        var expected = new List<string>();
        int Count() { lock (received) return received.Count(m => m.StartsWith(tag)); }
        for (int i = 0; i < 5; i++)
        {
            expected.Add($"{tag} before {i}");
            await b.InvokeAsync("Broadcast", expected[^1]).WaitAsync(Connections.Timeout);
        }
        await Wait.Until(() => Count() >= 5, "the first 5 broadcasts");

        forwarder.Cut();
        await Wait.Until(() => forwarder.Held >= 1 || Volatile.Read(ref closed) > 0,
                         "the client's reconnect attempt at the forwarder", Long);
        Check.Equal(0, Volatile.Read(ref closed), "Closed events after the cut (the client could not resume)");
        var echo = a.InvokeAsync<string>("Echo", $"{tag} sent during the gap");
        for (int i = 0; i < GapMessages; i++)
        {
            expected.Add($"{tag} gap {i}");
            await b.InvokeAsync("Broadcast", expected[^1]).WaitAsync(Connections.Timeout);
        }
        forwarder.Release();

        Check.Equal($"{tag} sent during the gap", await echo.WaitAsync(Long), "the Echo sent during the gap");
        expected.Add($"{tag} after");
        await b.InvokeAsync("Broadcast", expected[^1]).WaitAsync(Connections.Timeout);
        await Wait.Until(() => Count() >= expected.Count, $"all {expected.Count} broadcasts", Long);
        List<string> got;
        lock (received) got = received.Where(m => m.StartsWith(tag)).ToList();
        Check.SequenceEqual(expected, got, "every broadcast exactly once, in order");
        Check.Equal(0, reconnecting, "Reconnecting events (a new connection)");
        Check.Equal(0, closed, "Closed events");
        Check.Equal(HubConnectionState.Connected, a.State, "state after the gap");
        Check.Equal(idBefore, a.ConnectionId, "ConnectionId after the gap");
        var who = await a.InvokeAsync<CallerInfo>("WhoAmI").WaitAsync(Connections.Timeout);
        Check.Equal(backendId, who.connectionId, "the backend's connection after the gap");
    }
}

// A TCP forwarder to 127.0.0.1:targetPort that can cut every connection (a reset: no WebSocket
// Close) and hold new ones, accepted but not forwarded, until released: a network that drops and
// comes back.
public sealed class CuttingForwarder : IAsyncDisposable
{
    private readonly TcpListener _listener = new(IPAddress.Loopback, 0);
    private readonly int _targetPort;
    private readonly CancellationTokenSource _stop = new();
    private readonly List<TcpClient> _live = new();
    private readonly List<TcpClient> _held = new();
    private bool _holding;

    public CuttingForwarder(int targetPort)
    {
        _targetPort = targetPort;
        _listener.Start();
        Port = ((IPEndPoint)_listener.LocalEndpoint).Port;
        _ = AcceptLoop();
    }

    public int Port { get; }

    public int Held { get { lock (_live) return _held.Count; } }

    private async Task AcceptLoop()
    {
        while (!_stop.IsCancellationRequested)
        {
            TcpClient client;
            try { client = await _listener.AcceptTcpClientAsync(_stop.Token); }
            catch { return; }
            lock (_live)
            {
                if (_holding)
                {
                    _held.Add(client);
                    continue;
                }
            }
            _ = Pipe(client);
        }
    }

    private async Task Pipe(TcpClient client)
    {
        var upstream = new TcpClient();
        try { await upstream.ConnectAsync(IPAddress.Loopback, _targetPort); }
        catch { client.Dispose(); upstream.Dispose(); return; }
        lock (_live) { _live.Add(client); _live.Add(upstream); }
        await Task.WhenAny(Copy(client, upstream), Copy(upstream, client));
        client.Dispose();
        upstream.Dispose();
    }

    private static async Task Copy(TcpClient from, TcpClient to)
    {
        try { await from.GetStream().CopyToAsync(to.GetStream()); }
        catch { /* the other side went */ }
    }

    public void Cut()
    {
        lock (_live)
        {
            _holding = true;
            foreach (var s in _live)
            {
                try { s.Client.LingerState = new LingerOption(true, 0); } catch { /* already closed */ }
                s.Dispose();
            }
            _live.Clear();
        }
    }

    public void Release()
    {
        List<TcpClient> held;
        lock (_live)
        {
            _holding = false;
            held = _held.ToList();
            _held.Clear();
        }
        foreach (var c in held)
            _ = Pipe(c);
    }

    public ValueTask DisposeAsync()
    {
        _stop.Cancel();
        _listener.Stop();
        Cut();
        lock (_live)
        {
            foreach (var c in _held)
                c.Dispose();
            _held.Clear();
        }
        return ValueTask.CompletedTask;
    }
}
