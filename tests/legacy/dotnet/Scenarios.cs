// The legacy scenarios for the stock .NET client, the same as the jQuery suite's
// (tests/legacy/browser/test/legacy-jquery.test.mjs) where the .NET client can express them.
// Expected values come from the backend's hub code (tests/backend/Hubs) and the legacy protocol
// (spec §6.2 results and HubException, §6.3 progress, §7.4 replay on reconnect).
using System.Diagnostics;
using Microsoft.AspNet.SignalR.Client;
using Newtonsoft.Json.Linq;

namespace SignalrRelay.LegacyDotnet;

public sealed class Scenarios
{
    // SIGNALR_LEGACY_SERVER=reference: the server is the real ASP.NET SignalR 2.x server
    // (tests/legacy-ref) rather than the relay in front of the Core backend. Its hubs run on the
    // legacy connection itself: their Context.ConnectionId is the legacy connection id (a GUID),
    // and all hubs of a connection share it.
    private static readonly bool Reference = Environment.GetEnvironmentVariable("SIGNALR_LEGACY_SERVER") == "reference";

    // A Core connection id as ASP.NET Core mints them (the backend's Context.ConnectionId), or
    // the 2.x server's GUID against the reference.
    private static readonly string CoreConnectionId = Reference
        ? "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
        : "^[A-Za-z0-9_-]{22}$";

    private readonly string _url;

    public Scenarios(string url) => _url = url;

    public IEnumerable<(string Name, Func<Task> Run)> All() => new (string, Func<Task>)[]
    {
        ("welcome push on connect carries the backend's connection id", Welcome),
        ("Echo returns every JSON value type unchanged", EchoValues),
        ("EchoMany returns its arguments in order; Add returns the sum", EchoManyAndAdd),
        ("a void method completes with no result", VoidMethod),
        ("HubException: HubException with the backend's message", HubExceptionMessage),
        ("another exception: InvalidOperationException with the production text", OtherException),
        ("Broadcast reaches two connections, each message once and in order", Broadcast),
        ("groups: JoinGroup, SendToGroup, LeaveGroup, nothing after leaving", Groups),
        ("two hubs on one connection: ChatHub and StatusHub both work", TwoHubs),
        ("streaming method Counter: every item as progress, then completion", Counter),
        ("Stop(): prompt, and the backend runs OnDisconnectedAsync without error", StopDisconnects),
        ("reconnect: after a cut connection nothing broadcast meanwhile is lost or doubled", Reconnect),
        ("fixture session: Echo of several types, HubException, broadcast, Counter progress, Stop", FixtureSession),
        ("SecureHub: the test token in an Authorization header", SecureHeader),
        ("SecureHub: the test token in the query string", SecureQuery),
        ("SecureHub: a bad token or none, Start fails", SecureRefused),
        ("a cookie the client sends reaches the backend", CookieReachesBackend),
    };

    private static readonly IReadOnlyDictionary<string, string[]> SecureEvents = new Dictionary<string, string[]>
    {
        ["SecureHub"] = Array.Empty<string>(),
    };

    // The user the backend authenticated from the token, and where the token travelled.
    private static async Task<JObject> SecureWhoAmI(LegacyClient c)
    {
        var who = await c.Invoke<JObject>("SecureHub", "WhoAmI");
        Check.Equal("secure", who.Value<string>("hub"), "WhoAmI.hub");
        Check.Equal("good-user", who.Value<string>("user"), "WhoAmI.user (the token was accepted)");
        Check.SameJson(JToken.Parse("[1,\"a\"]"), await c.Invoke<JToken>("SecureHub", "Echo", (object)new object[] { 1, "a" }), "Echo on SecureHub");
        return who;
    }

    private async Task SecureHeader()
    {
        await using var c = await LegacyClient.Connect(_url, SecureEvents,
            configure: x => x.Connection.Headers.Add("Authorization", "Bearer good-token"));
        var who = await SecureWhoAmI(c);
        Check.Equal("Bearer good-token", who.Value<string>("authorization"), "Authorization header seen by the hub");
    }

    private async Task SecureQuery()
    {
        await using var c = await LegacyClient.Connect(_url, SecureEvents,
            query: new Dictionary<string, string> { ["access_token"] = "good-token" });
        var who = await SecureWhoAmI(c);
        Check.Equal("good-token", who.Value<string>("accessToken"), "access_token query seen by the hub");
    }

    private async Task SecureRefused()
    {
        foreach (var token in new[] { "bad-token", null })
        {
            var c = new LegacyClient(_url, SecureEvents,
                token is null ? null : new Dictionary<string, string> { ["access_token"] = token }) { ExpectErrors = true };
            try
            {
                var e = await Check.ThrowsAny(() => c.Connection.Start().WaitAsync(LegacyClient.Timeout),
                    $"Start with token {token ?? "(none)"}");
                Check.True(e is not TimeoutException, $"Start with token {token ?? "(none)"} timed out instead of failing: {Check.Describe(e)}");
                Check.Equal(ConnectionState.Disconnected, c.Connection.State, "state after the refused start");
            }
            finally
            {
                await c.DisposeAsync();
            }
        }
    }

    private async Task CookieReachesBackend()
    {
        string session = Unique("c");
        await using var c = await LegacyClient.Connect(_url, configure: x =>
        {
            x.Connection.CookieContainer = new System.Net.CookieContainer();
            x.Connection.CookieContainer.Add(new Uri(_url), new System.Net.Cookie("session", session));
        });
        // The hub (the backend through the relay, or the real server's) must see what the client sent.
        var details = await c.Invoke<JObject>("ChatHub", "RequestDetails");
        Check.Equal($"session={session}", details.Value<string>("cookie"), "Cookie header seen by the backend");
    }

    private static string Unique(string prefix) =>
        $"{prefix}-{Environment.ProcessId}-{DateTime.UtcNow.Ticks}-{Random.Shared.Next(1 << 30):x}";

    private Task<LegacyClient> ConnectChat() => LegacyClient.Connect(_url);

    private async Task Welcome()
    {
        await using var a = await ConnectChat();
        Check.True(!string.IsNullOrEmpty(a.Connection.ConnectionId), "negotiate gave a ConnectionId");
        Check.Matches(CoreConnectionId, a.BackendId, "welcome argument");
        var who = await a.Invoke<JObject>("ChatHub", "WhoAmI");
        Check.Equal("chat", who.Value<string>("hub"), "WhoAmI.hub");
        Check.Equal(a.BackendId, who.Value<string>("connectionId"), "WhoAmI.connectionId");
        Check.Equal(1, a.Events("ChatHub", "welcome").Count, "welcome pushes");
    }

    // Over HTTP transports the answer to /send (the result) is read by the client's
    // IResponseExtensions.ReadAsString, which decodes every read of the response on its own
    // (Encoding.UTF8.GetString per chunk): a multi-byte character split between two reads comes
    // out as replacement characters, whatever the server. Seen against the real 2.4.1 server
    // (tests/legacy-ref): 81927 characters back for 81920. So there the big string is ASCII;
    // the smaller non-ASCII strings above still cover every UTF-8 length.
    private static bool HttpTransport(LegacyClient c) => c.Connection.Transport?.Name != "webSockets";

    // Exactly 100 KiB of UTF-8 mixing 1-, 2-, 3- and 4-byte sequences (whole code points only);
    // ASCII only over HTTP transports (see HttpTransport).
    private static string BigString(bool ascii)
    {
        string unit = ascii ? "0123456789abcdefghijklmnopqrstuv" : "0123456789abcdef\u00e9\u20ac\U0001F600";
        int unitBytes = System.Text.Encoding.UTF8.GetByteCount(unit);
        const int target = 100 * 1024;
        int whole = target / unitBytes;
        string text = string.Concat(Enumerable.Repeat(unit, whole)) + new string('x', target - whole * unitBytes);
        Check.Equal(target, System.Text.Encoding.UTF8.GetByteCount(text), "size of the big string");
        return text;
    }

    // Values as JSON text, parsed by Json.NET as the client would send them. Integers beyond
    // 2^53 and beyond int64 show that nothing on the way turns numbers into doubles.
    private static readonly (string What, string Json)[] EchoValues_ =
    {
        ("ascii string", "\"hello\""),
        ("empty string", "\"\""),
        ("unicode string", "\"h\u00e9llo w\u00f6rld \u2014 \u65e5\u672c\u8a9e \U0001F389 \u2028\u2029\""),
        ("control characters and quotes", "\"tab\\t nl\\n rs\\u001e nul\\u0000 \\\"q\\\" back\\\\slash </script> +&=%\""),
        ("zero", "0"),
        ("small int", "42"),
        ("negative int", "-7"),
        ("int32 max", "2147483647"),
        ("int32 min", "-2147483648"),
        ("uint32 max + 1", "4294967296"),
        ("2^53 + 1", "9007199254740993"),
        ("int64 max", "9223372036854775807"),
        ("int64 min", "-9223372036854775808"),
        ("2^64 (BigInteger)", "18446744073709551616"),
        ("double", "3.141592653589793"),
        ("negative double", "-0.5"),
        ("huge double", "1E+300"),
        ("tiny double", "2.5E-300"),
        ("true", "true"),
        ("false", "false"),
        ("empty array", "[]"),
        ("empty object", "{}"),
        ("mixed array", "[1,\"two\",null,true,2.5,[3,[4]]]"),
        ("nested object", "{\"name\":\"n\",\"list\":[1,\"two\",{\"three\":3}],\"inner\":{\"deep\":{\"deeper\":[null,false]}}}"),
        ("object with legacy field names", "{\"H\":\"x\",\"M\":\"y\",\"A\":[1],\"I\":\"0\",\"R\":1,\"E\":\"e\",\"C\":\"c\",\"S\":1}"),
    };

    private async Task EchoValues()
    {
        await using var a = await ConnectChat();
        foreach (var (what, json) in EchoValues_)
        {
            var value = JToken.Parse(json);
            var echoed = await a.Invoke<JToken>("ChatHub", "Echo", value);
            Check.SameJson(value, echoed, $"Echo of {what}");
        }
        // null: the hub result leaves R out ({"I":"n"}), which the client returns as null.
        Check.True(await a.Invoke<JToken>("ChatHub", "Echo", (object?)null) is null, "Echo of null");

        string big = BigString(ascii: HttpTransport(a));
        string? bigEcho = await a.Invoke<string>("ChatHub", "Echo", big);
        Check.Equal(big.Length, bigEcho?.Length ?? -1, "Echo of 100 KiB: length");
        Check.True(big == bigEcho, "Echo of 100 KiB: content differs");
    }

    private async Task EchoManyAndAdd()
    {
        await using var a = await ConnectChat();
        var many = await a.Invoke<JToken>("ChatHub", "EchoMany", "first", 2, JToken.Parse("{\"third\":[3,\"x\"]}"));
        Check.SameJson(JToken.Parse("[\"first\",2,{\"third\":[3,\"x\"]}]"), many, "EchoMany");
        many = await a.Invoke<JToken>("ChatHub", "EchoMany", null, new JArray(), "\u00e9");
        Check.SameJson(JToken.Parse("[null,[],\"\u00e9\"]"), many, "EchoMany with null");
        Check.Equal(42, await a.Invoke<int>("ChatHub", "Add", 40, 2), "Add(40, 2)");
        Check.Equal(-2, await a.Invoke<int>("ChatHub", "Add", -5, 3), "Add(-5, 3)");
        Check.Equal(int.MaxValue, await a.Invoke<int>("ChatHub", "Add", int.MaxValue - 1, 1), "Add(int.MaxValue - 1, 1)");
    }

    private async Task VoidMethod()
    {
        await using var a = await ConnectChat();
        var result = await a.Invoke<JToken>("ChatHub", "VoidMethod");
        Check.True(result is null, $"VoidMethod result: expected none, got {Check.Show(result)}");
    }

    private async Task HubExceptionMessage()
    {
        await using var a = await ConnectChat();
        foreach (string message in new[] { "custom failure 42", "quote \" backslash \\ \u00fcn\u00efc\u00f6de \U0001F4A5 HubException: inner" })
        {
            // "H":true in the result makes the client throw its HubException (spec §6.2).
            var e = await Check.Throws<HubException>(() => a.Invoke("ChatHub", "ThrowHubException", message),
                                                      $"ThrowHubException({message})");
            Check.Equal(message, e.Message, "HubException.Message");
            Check.True(e.ErrorData is null, $"HubException.ErrorData: expected none, got {Check.Show(e.ErrorData)}");
        }
        Check.Equal(2, await a.Invoke<int>("ChatHub", "Add", 1, 1), "Add after the failures");
    }

    // Without detailed errors the text of any other exception never leaves the server: the 2.x
    // server's text, hub and method as the client wrote them (the real server's, tests/legacy-ref).
    private static readonly string[] ThrowOtherTexts =
    {
        "There was an error invoking Hub method 'ChatHub.ThrowOther'.",
    };

    private async Task OtherException()
    {
        await using var a = await ConnectChat();
        var e = await Check.Throws<InvalidOperationException>(() => a.Invoke("ChatHub", "ThrowOther"), "ThrowOther");
        Check.True(ThrowOtherTexts.Contains(e.Message), $"unexpected text {Check.Show(e.Message)}");
        Check.True(!e.Message.Contains("must not reach"), "the exception's own text leaked");
        Check.Equal(5, await a.Invoke<int>("ChatHub", "Add", 2, 3), "Add after the failure");
    }

    // The broadcasts c received that start with "<tag>-", as the labels after that prefix (short
    // enough to read in a failure message).
    private static List<string> BroadcastLabels(LegacyClient c, string tag) =>
        c.Events("ChatHub", "broadcast").Select(e => e.Args[0].Value<string>() ?? "")
            .Where(m => m.StartsWith(tag + "-", StringComparison.Ordinal))
            .Select(m => m.Substring(tag.Length + 1)).ToList();

    private async Task Broadcast()
    {
        await using var a = await ConnectChat();
        await using var b = await ConnectChat();
        string tag = Unique("bc");
        var labels = new[] { "1", "2", "3" };
        foreach (string label in labels)
            await a.Invoke("ChatHub", "Broadcast", $"{tag}-{label}");
        foreach (var (who, c) in new[] { ("a", a), ("b", b) })
        {
            await c.WaitForEvents("ChatHub", "broadcast", 1, e => e.Args[0].Value<string>() == $"{tag}-3");
            Check.SequenceEqual(labels, BroadcastLabels(c, tag), $"broadcasts at {who}");
        }
    }

    private async Task Groups()
    {
        await using var sender = await ConnectChat();
        await using var member = await ConnectChat();
        string group = Unique("group");
        await member.Invoke("ChatHub", "JoinGroup", group);
        await sender.Invoke("ChatHub", "SendToGroup", group, "first");
        var first = await member.WaitForEvents("ChatHub", "groupMessage", 1, e => e.Args[0].Value<string>() == group);
        Check.SameJson(new JArray(group, "first"), new JArray(first[0].Args), "first group message");

        await member.Invoke("ChatHub", "LeaveGroup", group);
        await sender.Invoke("ChatHub", "SendToGroup", group, "after-leave");
        // A broadcast sent after that reaches the member through the same backend connection and
        // message stream, so once it is there a wrongly delivered group message would be too.
        string marker = Unique("marker");
        await sender.Invoke("ChatHub", "Broadcast", marker);
        await member.WaitForEvents("ChatHub", "broadcast", 1, e => e.Args[0].Value<string>() == marker);

        var atMember = member.Events("ChatHub", "groupMessage").Select(e => new JArray(e.Args)).ToList();
        Check.Equal(1, atMember.Count, $"group messages at the member: {Check.Show(atMember)}");
        Check.Equal(0, sender.Events("ChatHub", "groupMessage").Count, "group messages at the sender (never joined)");
    }

    private async Task TwoHubs()
    {
        var hubs = new Dictionary<string, string[]>
        {
            ["ChatHub"] = new[] { "welcome" },
            ["StatusHub"] = new[] { "status" },
        };
        await using var a = await LegacyClient.Connect(_url, hubs);
        var pushed = await a.WaitForEvents("StatusHub", "status", 1);
        var push = (JObject)pushed[0].Args[0];
        string? statusId = push.Value<string>("connectionId");
        Check.Equal("status", push.Value<string>("hub"), "status push: hub");
        Check.Matches(CoreConnectionId, statusId, "status push: connectionId");
        if (Reference)
            Check.Equal(a.Connection.ConnectionId, statusId, "the 2.x server's hubs share the legacy connection id");
        else
            Check.True(statusId != a.BackendId, "each backend hub has its own connection");

        // Calls to both hubs in flight at once: each answer must reach its own call.
        var sum = a.Invoke<int>("ChatHub", "Add", 20, 22);
        var echo = a.Invoke<JToken>("StatusHub", "Echo", JToken.Parse("{\"a\":[1,\"b\"]}"));
        var status = a.Invoke<JObject>("StatusHub", "GetStatus");
        var chatWho = a.Invoke<JObject>("ChatHub", "WhoAmI");
        var statusWho = a.Invoke<JObject>("StatusHub", "WhoAmI");
        await Task.WhenAll(sum, echo, status, chatWho, statusWho);

        Check.Equal(42, sum.Result, "ChatHub.Add");
        Check.SameJson(JToken.Parse("{\"a\":[1,\"b\"]}"), echo.Result, "StatusHub.Echo");
        Check.Equal("status", status.Result.Value<string>("hub"), "GetStatus.hub");
        Check.Equal(statusId, status.Result.Value<string>("connectionId"), "GetStatus.connectionId");
        Check.True(status.Result.Value<int>("connected") >= 1, $"GetStatus.connected = {status.Result["connected"]}");
        Check.Equal("chat", chatWho.Result.Value<string>("hub"), "ChatHub.WhoAmI.hub");
        Check.Equal(a.BackendId, chatWho.Result.Value<string>("connectionId"), "ChatHub.WhoAmI.connectionId");
        Check.Equal("status", statusWho.Result.Value<string>("hub"), "StatusHub.WhoAmI.hub");
        Check.Equal(statusId, statusWho.Result.Value<string>("connectionId"), "StatusHub.WhoAmI.connectionId");
        Check.Equal(1, a.Events("ChatHub", "welcome").Count, "welcome pushes");
        Check.Equal(1, a.Events("StatusHub", "status").Count, "status pushes");
    }

    private async Task Counter()
    {
        await using var a = await ConnectChat();
        var items = new List<int>();
        // Invoke<T>(method, onProgress, args): stream items arrive as progress messages (spec §6.3).
        await a.Hub("ChatHub").Invoke<int>("Counter", i => { lock (items) items.Add(i); }, 5, 20)
            .WaitAsync(LegacyClient.Timeout);
        lock (items)
            CheckProgress(new[] { 0, 1, 2, 3, 4 }, items);
        Check.Equal("completed", await a.Invoke<string>("ChatHub", "GetStreamStatus"), "backend's stream status");
    }

    // Over longPolling the result comes back in the answer to /send while progress messages wait
    // for the next /poll, and the client forgets the invocation (and drops later progress) once
    // the result is in: against the real 2.4.1 server the last items are usually lost. So there
    // the items must be a prefix, in order, of the expected ones; elsewhere all of them.
    private static void CheckProgress(int[] expected, List<int> items)
    {
        if (LegacyClient.TransportName.Equals("longPolling", StringComparison.OrdinalIgnoreCase))
            Check.SequenceEqual(expected.Take(items.Count), items, $"progress items (a prefix of {expected.Length} over longPolling)");
        else
            Check.SequenceEqual(expected, items, "progress items");
    }

    private static Task<JObject> DisconnectInfo(LegacyClient probe, string? backendId) =>
        probe.Invoke<JObject>("ChatHub", "GetDisconnectInfo", backendId);

    private async Task StopDisconnects()
    {
        var gone = await ConnectChat();
        await using var probe = await ConnectChat();
        Check.SameJson(JObject.Parse("{\"disconnected\":false,\"hub\":null,\"error\":null}"),
                       await DisconnectInfo(probe, gone.BackendId), "before Stop");

        // Stop() posts /abort and blocks until the server ends the transport (spec §1.9, §9 item 13).
        var took = await gone.Stop(TimeSpan.FromSeconds(10));
        Check.Equal(ConnectionState.Disconnected, gone.Connection.State, "state after Stop");
        Check.True(took < TimeSpan.FromSeconds(5), $"Stop() blocked {took.TotalSeconds:0.0} s: the server did not close the socket after /abort");
        Check.Equal(1, gone.ClosedCount, "Closed events");

        JObject info = await LegacyClient.PollUntil(() => DisconnectInfo(probe, gone.BackendId),
            i => i.Value<bool>("disconnected"), $"OnDisconnectedAsync for {gone.BackendId} (the backend's record)");
        Check.SameJson(JObject.Parse("{\"disconnected\":true,\"hub\":\"chat\",\"error\":null}"), info,
                       "what the backend recorded");
    }

    private async Task Reconnect()
    {
        var target = new Uri(_url);
        await using var forwarder = new TcpForwarder(target.Host, target.Port);
        string viaForwarder = new UriBuilder(target) { Port = forwarder.Port }.Uri.ToString().TrimEnd('/');

        // The cut makes the client report the lost transport (Connection.Error): expected here.
        await using var a = await LegacyClient.Connect(viaForwarder, configure: c => c.ExpectErrors = true);
        await using var b = await ConnectChat();
        string legacyId = a.Connection.ConnectionId;
        string tag = Unique("rc");
        var sent = new List<string>();
        async Task<string> Send(string label)
        {
            string m = $"{tag}-{label}";
            sent.Add(label);
            await b.Invoke("ChatHub", "Broadcast", m);
            return m;
        }

        await Send("before-1");
        string lastBefore = await Send("before-2");
        await a.WaitForEvents("ChatHub", "broadcast", 1, e => e.Args[0].Value<string>() == lastBefore);

        // Cut a's TCP connections (RST) and refuse new ones: a network failure, not a stop.
        int cut = forwarder.Cut();
        Check.True(cut >= 1, "a had a live forwarded connection");
        await LegacyClient.WaitUntil(() => a.ReconnectingCount >= 1, "the client to notice the cut and start reconnecting");
        for (int i = 1; i <= 5; i++)
            await Send($"away-{i}");
        Check.Equal(0, a.ReconnectedCount, "reconnected while the path was still cut");

        forwarder.Resume();
        await LegacyClient.WaitUntil(() => a.ReconnectedCount >= 1, "Reconnected", TimeSpan.FromSeconds(20));
        Check.Equal(ConnectionState.Connected, a.Connection.State, "state after the reconnect");
        Check.Equal(legacyId, a.Connection.ConnectionId, "same legacy connection after the reconnect");

        await Send("after-1");
        string last = await Send("after-2");
        await a.WaitForEvents("ChatHub", "broadcast", 1, e => e.Args[0].Value<string>() == last);
        // A duplicate of an earlier message would come before the live ones; a duplicate of after-1
        // would come before after-2, which travels behind it on the same stream.
        Check.SequenceEqual(sent, BroadcastLabels(a, tag), "broadcasts at the reconnected client");

        // The backend connection survived: no second welcome, same id, no OnDisconnectedAsync.
        Check.Equal(1, a.Events("ChatHub", "welcome").Count, "welcome pushes (OnConnectedAsync ran again?)");
        var who = await a.Invoke<JObject>("ChatHub", "WhoAmI");
        Check.Equal(a.BackendId, who.Value<string>("connectionId"), "backend connection id after the reconnect");
        Check.Equal(15, await a.Invoke<int>("ChatHub", "Add", 7, 8), "Add after the reconnect");
        Check.SameJson(JObject.Parse("{\"disconnected\":false,\"hub\":null,\"error\":null}"),
                       await DisconnectInfo(b, a.BackendId), "backend's disconnect record of a");
    }

    // One connection's whole life in one scenario, with small payloads only: what
    // scripts/capture-legacy-fixtures.sh records as fixtures/legacy/dotnet-*-session.jsonl (selected
    // by SIGNALR_LEGACY_ONLY="fixture session").
    private async Task FixtureSession()
    {
        var a = await ConnectChat();
        try
        {
            foreach (string json in new[] { "\"hello\"", "\"h\u00e9llo \u65e5\u672c \U0001F389\"", "42", "-7",
                                            "9007199254740993", "3.141592653589793", "true", "[1,\"two\",null,[3]]",
                                            "{\"name\":\"n\",\"inner\":{\"deep\":[null,false]}}" })
            {
                var v = JToken.Parse(json);
                Check.SameJson(v, await a.Invoke<JToken>("ChatHub", "Echo", v), $"Echo of {json}");
            }
            Check.True(await a.Invoke<JToken>("ChatHub", "Echo", (object?)null) is null, "Echo of null");
            Check.Equal(42, await a.Invoke<int>("ChatHub", "Add", 40, 2), "Add(40, 2)");

            var e = await Check.Throws<HubException>(() => a.Invoke("ChatHub", "ThrowHubException", "fixture failure \"q\""),
                                                      "ThrowHubException");
            Check.Equal("fixture failure \"q\"", e.Message, "HubException.Message");

            await a.Invoke("ChatHub", "Broadcast", "fixture broadcast");
            var got = await a.WaitForEvents("ChatHub", "broadcast", 1, ev => ev.Args[0].Value<string>() == "fixture broadcast");
            Check.Equal(1, got.Count, "broadcasts received");

            var items = new List<int>();
            await a.Hub("ChatHub").Invoke<int>("Counter", i => { lock (items) items.Add(i); }, 3, 10)
                .WaitAsync(LegacyClient.Timeout);
            lock (items)
                CheckProgress(new[] { 0, 1, 2 }, items);

            var took = await a.Stop(TimeSpan.FromSeconds(10));
            Check.Equal(ConnectionState.Disconnected, a.Connection.State, "state after Stop");
            Check.True(took < TimeSpan.FromSeconds(5), $"Stop() blocked {took.TotalSeconds:0.0} s");
        }
        finally
        {
            await a.DisposeAsync();
        }
    }
}
