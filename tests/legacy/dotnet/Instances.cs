// Stock legacy .NET clients against a relay whose ChatHub has several backend instances (issue 14):
// clients spread over the instances, each client's calls and its backend link stay on its instance
// (across a client reconnect too), and when one instance is killed its clients hear of it while the
// others go on undisturbed. tests/relay/test/legacy-instances.test.mjs starts the relay and the
// backends and runs these with:
//   SIGNALR_LEGACY_INSTANCES    the instances' ports, comma-separated (the test backend's
//                               RequestDetails reports the port that served a call)
//   SIGNALR_LEGACY_VICTIM_PID   the backend process the kill scenario ends (the second port's)
using System.Diagnostics;
using Microsoft.AspNet.SignalR.Client;
using Newtonsoft.Json.Linq;

namespace SignalrRelay.LegacyDotnet;

public sealed class Instances
{
    private readonly string _url;
    private readonly int[] _ports;
    private readonly int _victimPid;

    public Instances(string url, string ports, string? victimPid)
    {
        _url = url;
        _ports = ports.Split(',').Select(int.Parse).ToArray();
        _victimPid = int.TryParse(victimPid, out int pid) ? pid : 0;
    }

    public IEnumerable<(string Name, Func<Task> Run)> All() => new (string, Func<Task>)[]
    {
        ($"clients spread over {_ports.Length} instances; calls and links stay on each client's instance, across a reconnect too", Spread),
        ("an instance killed: its clients hear of it and a new start lands on a survivor; the others go on undisturbed", Kill),
    };

    // The port of the backend instance that serves this client's ChatHub calls.
    private static async Task<int> PortOf(LegacyClient c) =>
        (await c.Invoke<JObject>("ChatHub", "RequestDetails")).Value<int>("localPort");

    private async Task<List<(LegacyClient Client, int Port)>> ConnectMany(int count, Action<LegacyClient>? configure = null)
    {
        var clients = new List<(LegacyClient, int)>();
        for (int i = 0; i < count; i++)
        {
            var c = await LegacyClient.Connect(_url, configure: configure);
            clients.Add((c, await PortOf(c)));
        }
        return clients;
    }

    private static async Task DisposeAll(IEnumerable<LegacyClient> clients)
    {
        foreach (var c in clients)
            await c.DisposeAsync();
    }

    private async Task Spread()
    {
        var clients = await ConnectMany(2 * _ports.Length);
        try
        {
            // Fewest links first, ties in turn: two on each instance.
            foreach (int port in _ports)
                Check.Equal(2, clients.Count(x => x.Port == port), $"clients on the instance at port {port} " +
                            $"(ports served: {string.Join(",", clients.Select(x => x.Port))})");
            foreach (var (c, port) in clients)
            {
                Check.Equal("again", await c.Invoke<string>("ChatHub", "Echo", "again"), "Echo");
                Check.Equal(port, await PortOf(c), "the instance of a later call");
            }

            // A client whose transport is cut and comes back (/reconnect) keeps its backend link,
            // so its instance and its backend connection id.
            var target = new Uri(_url);
            await using var forwarder = new TcpForwarder(target.Host, target.Port);
            string viaForwarder = new UriBuilder(target) { Port = forwarder.Port }.Uri.ToString().TrimEnd('/');
            await using var a = await LegacyClient.Connect(viaForwarder, configure: c => c.ExpectErrors = true);
            int before = await PortOf(a);
            Check.True(forwarder.Cut() >= 1, "the client had a live forwarded connection");
            await LegacyClient.WaitUntil(() => a.ReconnectingCount >= 1, "the client to notice the cut and start reconnecting");
            forwarder.Resume();
            await LegacyClient.WaitUntil(() => a.ReconnectedCount >= 1, "Reconnected", TimeSpan.FromSeconds(20));
            Check.Equal(before, await PortOf(a), "the instance after the reconnect");
            Check.Equal(a.BackendId, (await a.Invoke<JObject>("ChatHub", "WhoAmI")).Value<string>("connectionId"),
                        "the backend connection id after the reconnect (the same link)");
            foreach (var (c, _) in clients)
                Check.Equal(0, c.ReconnectingCount, "reconnects of the clients that were not cut");
        }
        finally
        {
            await DisposeAll(clients.Select(x => x.Client));
        }
    }

    private async Task Kill()
    {
        Check.True(_victimPid > 0, "SIGNALR_LEGACY_VICTIM_PID names the backend to kill");
        int victimPort = _ports[1];
        // Those on the victim report the loss (Connection.Error): expected for them only, set below.
        var clients = await ConnectMany(2 * _ports.Length);
        var victims = clients.Where(x => x.Port == victimPort).Select(x => x.Client).ToList();
        var others = clients.Where(x => x.Port != victimPort).ToList();
        var fresh = new List<LegacyClient>();
        try
        {
            Check.True(victims.Count >= 1, $"a client on the victim (ports served: {string.Join(",", clients.Select(x => x.Port))})");
            foreach (var v in victims)
                v.ExpectErrors = true;
            Process.GetProcessById(_victimPid).Kill();

            // Each victim hears that its hub is gone: the relay's error frame (E, naming the hub)
            // reaches it as an error, and its connection ends (Closed) for the app to start again.
            string Describe() => string.Join("; ", victims.Select(v =>
                $"state {v.Connection.State}, reconnecting {v.ReconnectingCount}, closed {v.ClosedCount}, errors [{string.Join(" | ", v.Errors())}]"));
            const string lost = "The relay lost its connection to the backend hub 'ChatHub'";
            try
            {
                await LegacyClient.WaitUntil(() => victims.All(v => v.Errors().Any(e => e.Contains(lost)) && v.ClosedCount == 1),
                                             "every client of the killed instance to get the error and close", TimeSpan.FromSeconds(30));
            }
            catch (CheckFailed e)
            {
                throw new CheckFailed($"{e.Message}; victims: {Describe()}");
            }
            Console.WriteLine("# victims: " + Describe());

            // The others: no error, no reconnect, still on their instance, calls answered.
            foreach (var (c, port) in others)
            {
                Check.Equal($"still {port}", await c.Invoke<string>("ChatHub", "Echo", $"still {port}"), "Echo after the kill");
                Check.Equal(port, await PortOf(c), "the instance of an undisturbed client");
                Check.Equal(ConnectionState.Connected, c.Connection.State, "state of an undisturbed client");
                Check.Equal(0, c.ReconnectingCount, "reconnects of an undisturbed client");
                Check.Equal(0, c.ClosedCount, "closes of an undisturbed client");
                Check.Empty(c.Errors(), "errors of an undisturbed client");
            }

            // A new start (what a client that gave up does) lands on a survivor and works.
            foreach (var v in victims)
            {
                var again = await LegacyClient.Connect(_url);
                fresh.Add(again);
                int port = await PortOf(again);
                Check.True(port != victimPort && _ports.Contains(port), $"a new client on a survivor (port {port})");
                Check.Equal("back", await again.Invoke<string>("ChatHub", "Echo", "back"), "Echo on a new client");
            }
        }
        finally
        {
            await DisposeAll(clients.Select(x => x.Client).Concat(fresh));
        }
    }
}
