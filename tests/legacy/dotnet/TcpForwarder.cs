// A TCP forwarder on 127.0.0.1 between the legacy client and the server, so that a test can cut
// the client's connections the way a network failure would: the .NET client has no public socket
// to close. Cut() resets every forwarded connection and refuses new ones until Resume(); the
// client sees its WebSocket fail, enters "reconnecting" and retries /reconnect until we resume.
using System.Net;
using System.Net.Sockets;

namespace SignalrRelay.LegacyDotnet;

public sealed class TcpForwarder : IAsyncDisposable
{
    private readonly TcpListener _listener = new(IPAddress.Loopback, 0);
    private readonly string _targetHost;
    private readonly int _targetPort;
    private readonly CancellationTokenSource _stopping = new();
    private readonly List<(Socket Client, Socket Server)> _pairs = new();
    private readonly Task _acceptLoop;
    private volatile bool _refusing;

    public int Port => ((IPEndPoint)_listener.LocalEndpoint).Port;
    public int Accepted { get; private set; }
    public int Refused { get; private set; }

    public TcpForwarder(string targetHost, int targetPort)
    {
        _targetHost = targetHost;
        _targetPort = targetPort;
        _listener.Start();
        _acceptLoop = AcceptLoop();
    }

    private async Task AcceptLoop()
    {
        while (!_stopping.IsCancellationRequested)
        {
            Socket client;
            try
            {
                client = await _listener.AcceptSocketAsync(_stopping.Token);
            }
            catch (Exception) when (_stopping.IsCancellationRequested)
            {
                return;
            }
            if (_refusing)
            {
                Refused++;
                Reset(client);
                continue;
            }
            Accepted++;
            _ = Forward(client);
        }
    }

    private async Task Forward(Socket client)
    {
        var server = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp) { NoDelay = true };
        client.NoDelay = true;
        try
        {
            using var connectTimeout = CancellationTokenSource.CreateLinkedTokenSource(_stopping.Token);
            connectTimeout.CancelAfter(TimeSpan.FromSeconds(5));
            await server.ConnectAsync(_targetHost, _targetPort, connectTimeout.Token);
        }
        catch (Exception)
        {
            Reset(client);
            server.Dispose();
            return;
        }
        lock (_pairs)
            _pairs.Add((client, server));
        await Task.WhenAll(Pump(client, server), Pump(server, client));
        lock (_pairs)
            _pairs.Remove((client, server));
        client.Dispose();
        server.Dispose();
    }

    private static async Task Pump(Socket from, Socket to)
    {
        var buffer = new byte[16384];
        try
        {
            while (true)
            {
                int n = await from.ReceiveAsync(buffer, SocketFlags.None);
                if (n == 0)
                {
                    to.Shutdown(SocketShutdown.Send);
                    return;
                }
                await to.SendAsync(buffer.AsMemory(0, n), SocketFlags.None);
            }
        }
        catch (Exception)
        {
            // A reset or a cut: end both directions.
            Reset(from);
            Reset(to);
        }
    }

    // Closes with RST (linger 0), as a failed network path looks to both ends.
    private static void Reset(Socket socket)
    {
        try
        {
            socket.LingerState = new LingerOption(true, 0);
            socket.Close();
        }
        catch (Exception)
        {
            // already closed
        }
    }

    // Cuts every live forwarded connection and refuses new ones until Resume(). Returns how many
    // connections were cut.
    public int Cut()
    {
        _refusing = true;
        List<(Socket Client, Socket Server)> pairs;
        lock (_pairs)
            pairs = _pairs.ToList();
        foreach (var (c, s) in pairs)
        {
            Reset(c);
            Reset(s);
        }
        return pairs.Count;
    }

    public void Resume() => _refusing = false;

    public async ValueTask DisposeAsync()
    {
        _stopping.Cancel();
        _listener.Stop();
        Cut();
        try
        {
            await _acceptLoop.WaitAsync(TimeSpan.FromSeconds(2));
        }
        catch (Exception)
        {
            // best effort
        }
    }
}
