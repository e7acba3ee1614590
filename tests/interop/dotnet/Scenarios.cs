// The interop scenarios, the same as the JS suite's as far as the .NET client can express them.
// Each one checks real values that come back from the backend (directly or through the relay).
using System.Net;
using System.Net.WebSockets;
using System.Runtime.CompilerServices;
using System.Text;
using System.Text.Json;
using System.Threading.Channels;
using Microsoft.AspNetCore.SignalR;
using Microsoft.AspNetCore.SignalR.Client;

namespace SignalrRelay.InteropDotnet;

public sealed class Scenarios
{
    private const string ConnectionIdPattern = "^[A-Za-z0-9_-]{22}$";
    private static readonly TimeSpan Timeout = Connections.Timeout;

    private readonly Env _env;
    private readonly Connections _connections;

    public Scenarios(Env env)
    {
        _env = env;
        _connections = new Connections(env);
    }

    public IEnumerable<(string Name, Func<Task> Run)> All() => Everywhere().Concat(
        Environment.GetEnvironmentVariable("SIGNALR_DOOMED_PATH") is { Length: > 0 } path &&
        int.TryParse(Environment.GetEnvironmentVariable("SIGNALR_DOOMED_PID"), out int pid)
            ? new (string, Func<Task>)[] { ("the backend process dies: Closed with an error, or Reconnecting", () => BackendDies(path, pid)) }
            : Array.Empty<(string, Func<Task>)>());

    private IEnumerable<(string Name, Func<Task> Run)> Everywhere() => AllTransports().Concat(
        _env.TransportName == "WebSockets"
            ? new (string, Func<Task>)[] { ("stateful reconnect: a drop mid-stream loses nothing (StatefulReconnect.cs)",
                                            () => StatefulReconnect.DropMidStream(_env, _connections)) }
            : Array.Empty<(string, Func<Task>)>());

    private IEnumerable<(string Name, Func<Task> Run)> AllTransports() => new (string, Func<Task>)[]
    {
        ("welcome push on connect", WelcomePush),
        ("echo of every value type incl. 1 MiB", EchoValues),
        ("EchoMany with three arguments", EchoMany),
        ("Add", Add),
        ("void method", VoidMethod),
        ("HubException text", HubExceptionText),
        ("other exception / unknown method / bad arguments texts", OtherErrorTexts),
        ("client result (AskClient -> GetName)", ClientResult),
        ("second hub /status", StatusHub),
        ("broadcast to two connections", Broadcast),
        ("groups join/send/leave", Groups),
        ("server->client stream completes", StreamCompletes),
        ("server->client stream cancelled", StreamCancelled),
        ("client->server upload stream Sum", UploadSum),
        ("AbortMe closes the connection", AbortMe),
        ("StopAsync runs OnDisconnectedAsync on the backend", StopRunsOnDisconnected),
        ("skip negotiation (WebSockets)", SkipNegotiation),
        ("negotiate v1 shape", NegotiateV1),
        ("negotiate v0 shape", NegotiateV0),
        ("SecureHub with good token", SecureGoodToken),
        ("SecureHub refuses bad/missing token with 401", SecureBadToken),
        ("WhoAmI sees tag query parameter", WhoAmITag),
        ("DateTime end to end (MessagePack timestamp, JSON text)", DateTimeRoundTrip),
        ("a cookie the client sends reaches the backend", CookieReachesBackend),
    };

    // SIGNALR_DOOMED_PATH is a chat hub whose backend process (SIGNALR_DOOMED_PID) this scenario
    // kills (scripts/interop.sh starts one per run). A client without automatic reconnect must get
    // Closed with an error (directly: the lost WebSocket; through the relay: its Close naming the
    // lost backend), one with automatic reconnect must start reconnecting (through the relay: the
    // Close allowed it), and neither may hang.
    private async Task BackendDies(string path, int pid)
    {
        var (plain, _) = await _connections.ConnectChat(path);
        await using var _p = plain;
        Connections.ExpectCloseError(plain);
        var reconnecting = _connections.Build(path, automaticReconnect: new[] { TimeSpan.FromSeconds(60) });
        await using var _r = reconnecting;
        Connections.ExpectCloseError(reconnecting);
        await reconnecting.StartAsync().WaitAsync(Timeout);

        var closed = new TaskCompletionSource<Exception?>(TaskCreationOptions.RunContinuationsAsynchronously);
        plain.Closed += e => { closed.TrySetResult(e); return Task.CompletedTask; };
        var reconnectingSeen = new TaskCompletionSource<Exception?>(TaskCreationOptions.RunContinuationsAsynchronously);
        reconnecting.Reconnecting += e => { reconnectingSeen.TrySetResult(e); return Task.CompletedTask; };
        reconnecting.Closed += e => { reconnectingSeen.TrySetException(new CheckFailed($"Closed instead of Reconnecting: {e?.Message}")); return Task.CompletedTask; };

        Check.Equal("alive", await plain.InvokeAsync<string>("Echo", "alive").WaitAsync(Timeout), "Echo before the kill");
        Check.Equal("alive", await reconnecting.InvokeAsync<string>("Echo", "alive").WaitAsync(Timeout), "Echo before the kill");
        System.Diagnostics.Process.GetProcessById(pid).Kill();

        var error = await closed.Task.WaitAsync(TimeSpan.FromSeconds(30));
        Check.True(error is not null, "Closed without an error after the backend died");
        if (!_env.Direct)
            Check.Matches("The relay lost its connection to the backend hub 'doomed'", error!.Message, "Closed error through the relay");
        Check.Equal(HubConnectionState.Disconnected, plain.State, "state after the backend died");

        var why = await reconnectingSeen.Task.WaitAsync(TimeSpan.FromSeconds(30));
        Check.True(why is not null, "Reconnecting without an error");
        Check.Equal(HubConnectionState.Reconnecting, reconnecting.State, "state of the client with automatic reconnect");
    }

    // A UTC DateTime through Echo(object): MessagePack carries it as a timestamp (extension -1)
    // both ways and the hub gets a DateTime; JSON carries ISO 8601 text, read back as a DateTime.
    private async Task DateTimeRoundTrip()
    {
        var (c, _) = await _connections.ConnectChat();
        await using var _c = c;
        foreach (var when in new[]
        {
            new DateTime(2024, 2, 29, 12, 34, 56, 789, DateTimeKind.Utc),
            new DateTime(1969, 7, 20, 20, 17, 40, DateTimeKind.Utc),
            new DateTime(2106, 2, 7, 6, 28, 16, 1, DateTimeKind.Utc).AddTicks(2345),
        })
        {
            var back = await c.InvokeAsync<DateTime>("Echo", when).WaitAsync(Timeout);
            Check.Equal(when.Ticks, back.ToUniversalTime().Ticks, $"Echo of {when:O} (came back as {back:O}, {back.Kind})");
        }
    }

    private async Task CookieReachesBackend()
    {
        // The client's own cookie jar (HttpConnectionOptions.Cookies), used for every request.
        string session = Connections.UniqueName("c");
        var (c, _) = await _connections.ConnectChat(configure: o =>
        {
            o.Cookies.Add(new Uri(_env.BaseUrl), new Cookie("session", session));
            o.Cookies.Add(new Uri(_env.BaseUrl), new Cookie("theme", "dark"));
        });
        await using var _c = c;
        var details = await c.InvokeAsync<RequestDetails>("RequestDetails").WaitAsync(Timeout);
        Check.SequenceEqual(new[] { $"session={session}", "theme=dark" },
            (details.cookie ?? "").Split("; ", StringSplitOptions.RemoveEmptyEntries).Order(), "cookies seen by the backend");
    }

    private async Task WelcomePush()
    {
        var (c, backendId) = await _connections.ConnectChat();
        await using var _ = c;
        Check.Matches(ConnectionIdPattern, backendId, "welcome id");
        if (_env.Direct)
            Check.Equal(c.ConnectionId, backendId, "welcome id = client's connection id");
        var who = await c.InvokeAsync<CallerInfo>("WhoAmI");
        Check.Equal(backendId, who.connectionId, "WhoAmI connectionId");
    }

    // Exactly 1 MiB of UTF-8 mixing 1-, 2-, 3- and 4-byte sequences, whole code points only.
    private static string BigString()
    {
        const string unit = "0123456789abcdef\u00e9\u20ac\U0001F600";
        int unitBytes = Encoding.UTF8.GetByteCount(unit);
        const int target = 1 << 20;
        int whole = target / unitBytes;
        var text = new StringBuilder().Insert(0, unit, whole).Append('x', target - whole * unitBytes).ToString();
        Check.Equal(target, Encoding.UTF8.GetByteCount(text), "1 MiB string size");
        return text;
    }

    private static async Task EchoSame<T>(HubConnection c, T value, string what)
    {
        var echoed = await c.InvokeAsync<T>("Echo", value);
        Check.Equal(value, echoed, $"Echo of {what}");
    }

    private static async Task EchoSameSequence<T>(HubConnection c, T[] value, string what)
    {
        var echoed = await c.InvokeAsync<T[]>("Echo", value);
        Check.SequenceEqual(value, echoed, $"Echo of {what}");
    }

    private async Task EchoValues()
    {
        var (c, _) = await _connections.ConnectChat();
        await using var __ = c;
        await EchoSame(c, "hello", "ascii string");
        await EchoSame(c, "", "empty string");
        await EchoSame(c, "h\u00e9llo w\u00f6rld \u2014 \u65e5\u672c\u8a9e \U0001F389", "unicode string");
        await EchoSame(c, "tab\t nl\n rs\u001e nul\u0000 \"q\" back\\slash </script>", "control characters");
        await EchoSame<string?>(c, null, "null");
        await EchoSame(c, 0, "zero");
        await EchoSame(c, 42, "small int");
        await EchoSame(c, -7, "negative int");
        await EchoSame(c, int.MaxValue, "int32 max");
        await EchoSame(c, int.MinValue, "int32 min");
        await EchoSame(c, 4294967296L, "uint32 max + 1");
        await EchoSame(c, long.MaxValue, "int64 max");
        await EchoSame(c, long.MinValue, "int64 min");
        await EchoSame(c, 3.141592653589793, "double");
        await EchoSame(c, -0.5, "negative double");
        await EchoSame(c, 1e300, "huge double");
        await EchoSame(c, 2.5e-300, "tiny double");
        await EchoSame(c, true, "true");
        await EchoSame(c, false, "false");
        await EchoSameSequence(c, Array.Empty<int>(), "empty array");
        await EchoSameSequence(c, new[] { 1, 2, 3 }, "int array");
        await EchoSameSequence(c, new[] { "a", null, "\u20ac" }, "string array with null");
        await EchoSameSequence(c, new byte[] { 0, 1, 2, 0x1e, 0x7f, 0x80, 0xff }, "bytes");

        var nested = new Nested
        {
            Name = "outer",
            Values = new[] { 1, -2, 3 },
            Scores = new Dictionary<string, double> { ["x"] = 1.5, ["y"] = -2 },
            Child = new Nested { Name = "inner \u00e9", Values = new[] { 42 } },
        };
        var echoedNested = await c.InvokeAsync<Nested>("Echo", nested);
        Check.True(Nested.Same(nested, echoedNested), $"Echo of nested object: expected {nested}, got {echoedNested}");

        await EchoSame(c, BigString(), "1 MiB string");
    }

    private async Task EchoMany()
    {
        var (c, _) = await _connections.ConnectChat();
        await using var __ = c;
        Check.SequenceEqual(new[] { "first", "second", "third" },
            await c.InvokeAsync<string[]>("EchoMany", "first", "second", "third"), "EchoMany strings");
        Check.SequenceEqual(new[] { "a", null, "c" },
            await c.InvokeAsync<string?[]>("EchoMany", "a", null, "c"), "EchoMany with null");
        Check.SequenceEqual(new[] { 1, 2, 3 },
            await c.InvokeAsync<int[]>("EchoMany", 1, 2, 3), "EchoMany ints");
    }

    private async Task Add()
    {
        var (c, _) = await _connections.ConnectChat();
        await using var __ = c;
        Check.Equal(42, await c.InvokeAsync<int>("Add", 40, 2), "Add(40, 2)");
        Check.Equal(-2, await c.InvokeAsync<int>("Add", -5, 3), "Add(-5, 3)");
    }

    private async Task VoidMethod()
    {
        var (c, _) = await _connections.ConnectChat();
        await using var __ = c;
        await c.InvokeAsync("VoidMethod");
        Check.Equal(null, await c.InvokeAsync<object?>("VoidMethod"), "result of a void method");
    }

    private async Task HubExceptionText()
    {
        var (c, _) = await _connections.ConnectChat();
        await using var __ = c;
        var e = await Check.Throws<HubException>(() => c.InvokeAsync("ThrowHubException", "custom failure 42"),
            "ThrowHubException");
        Check.Equal("An unexpected error occurred invoking 'ThrowHubException' on the server. HubException: custom failure 42",
            e.Message, "HubException text");
        Check.Equal(2, await c.InvokeAsync<int>("Add", 1, 1), "connection still usable");
    }

    private async Task OtherErrorTexts()
    {
        var (c, _) = await _connections.ConnectChat();
        await using var __ = c;
        var other = await Check.Throws<HubException>(() => c.InvokeAsync("ThrowOther"), "ThrowOther");
        Check.Equal("An unexpected error occurred invoking 'ThrowOther' on the server.", other.Message,
            "other exception text");
        var unknown = await Check.Throws<HubException>(() => c.InvokeAsync("NoSuchMethod", 1), "NoSuchMethod");
        Check.Equal("Failed to invoke 'NoSuchMethod' due to an error on the server. HubException: Method does not exist.",
            unknown.Message, "unknown method text");
        var badArgs = await Check.Throws<HubException>(() => c.InvokeAsync<int>("Add", 1), "Add with one argument");
        Check.Equal("Failed to invoke 'Add' due to an error on the server.", badArgs.Message, "bad arguments text");
        Check.Equal(5, await c.InvokeAsync<int>("Add", 2, 3), "connection still usable");
    }

    private async Task ClientResult()
    {
        await using var c = _connections.Build("/chat");
        string? asked = null;
        c.On<string, string>("GetName", question =>
        {
            asked = question;
            return "dotnet-client:" + question;
        });
        await c.StartAsync().WaitAsync(Timeout);
        var answer = await c.InvokeAsync<string>("AskClient").WaitAsync(Timeout);
        Check.Equal("backend-asks", asked, "argument the backend sent to GetName");
        Check.Equal("dotnet-client:backend-asks", answer, "AskClient result");
    }

    private async Task StatusHub()
    {
        await using var c = _connections.Build("/status");
        var pushed = Connections.NextEvent<StatusInfo>(c, "status");
        await c.StartAsync().WaitAsync(Timeout);
        var status = await pushed.WaitAsync(Timeout);
        Check.Equal("status", status.hub, "pushed hub");
        Check.Matches(ConnectionIdPattern, status.connectionId, "pushed connection id");
        Check.Equal("still here", await c.InvokeAsync<string>("Echo", "still here"), "Echo on /status");
        var current = await c.InvokeAsync<StatusInfo>("GetStatus");
        Check.Equal("status", current.hub, "GetStatus hub");
        Check.Equal(status.connectionId, current.connectionId, "GetStatus connection id");
        Check.True(current.connected >= 1, $"GetStatus connected = {current.connected}");

        var (chat, chatId) = await _connections.ConnectChat();
        await using var _ = chat;
        Check.True(chatId != status.connectionId, "/chat and /status connections have different ids");
        Check.Equal(3, await chat.InvokeAsync<int>("Add", 1, 2), "Add on /chat beside /status");
    }

    private async Task Broadcast()
    {
        var (a, _) = await _connections.ConnectChat();
        await using var _a = a;
        var (b, _) = await _connections.ConnectChat();
        await using var _b = b;
        string message = Connections.UniqueName("broadcast");
        var atA = Connections.NextEvent<string>(a, "broadcast", m => m == message);
        var atB = Connections.NextEvent<string>(b, "broadcast", m => m == message);
        await a.InvokeAsync("Broadcast", message);
        Check.Equal(message, await atA.WaitAsync(Timeout), "broadcast at sender");
        Check.Equal(message, await atB.WaitAsync(Timeout), "broadcast at other connection");
    }

    private async Task Groups()
    {
        var (sender, _) = await _connections.ConnectChat();
        await using var _s = sender;
        var (member, _) = await _connections.ConnectChat();
        await using var _m = member;
        string group = Connections.UniqueName("group");
        var atSender = new List<string>();
        var atMember = new List<string>();
        sender.On<string, string>("groupMessage", (g, m) => { lock (atSender) atSender.Add(g + "|" + m); });
        member.On<string, string>("groupMessage", (g, m) => { lock (atMember) atMember.Add(g + "|" + m); });

        await member.InvokeAsync("JoinGroup", group);
        var first = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        member.On<string, string>("groupMessage", (g, m) => { if (g == group && m == "first") first.TrySetResult(); });
        await sender.InvokeAsync("SendToGroup", group, "first");
        await first.Task.WaitAsync(Timeout);

        await member.InvokeAsync("LeaveGroup", group);
        await sender.InvokeAsync("SendToGroup", group, "after-leave");
        // SendToGroup has completed, so anything for `member` is queued ahead of this answer.
        Check.Equal("sync", await member.InvokeAsync<string>("Echo", "sync"), "sync echo");

        lock (atMember) Check.SequenceEqual(new[] { group + "|first" }, atMember.ToArray(), "group messages at member");
        lock (atSender) Check.SequenceEqual(Array.Empty<string>(), atSender.ToArray(), "group messages at sender");
    }

    private async Task StreamCompletes()
    {
        var (c, _) = await _connections.ConnectChat();
        await using var __ = c;
        var items = new List<int>();
        await foreach (int item in c.StreamAsync<int>("Counter", 5, 10))
            items.Add(item);
        Check.SequenceEqual(new[] { 0, 1, 2, 3, 4 }, items, "stream items");
        Check.Equal("completed", await c.InvokeAsync<string>("GetStreamStatus"), "stream status on the backend");
    }

    private async Task StreamCancelled()
    {
        var (c, _) = await _connections.ConnectChat();
        await using var __ = c;
        using var cancel = new CancellationTokenSource();
        var items = new List<int>();
        string? statusWhileRunning = null;
        try
        {
            await foreach (int item in c.StreamAsync<int>("Counter", 1000, 50, cancel.Token))
            {
                items.Add(item);
                if (items.Count == 3)
                {
                    statusWhileRunning = await c.InvokeAsync<string>("GetStreamStatus");
                    cancel.Cancel(); // sends CancelInvocation
                }
            }
            throw new CheckFailed("stream completed although it was cancelled");
        }
        catch (OperationCanceledException)
        {
        }
        Check.Equal("running", statusWhileRunning, "stream status before cancel");
        Check.SequenceEqual(new[] { 0, 1, 2 }, items.Take(3), "first stream items");
        var status = await Connections.PollUntil(() => c.InvokeAsync<string>("GetStreamStatus"),
            s => s != "running", "the backend to end the stream");
        Check.Equal("cancelled", status, "stream status after cancel");
    }

    private static async IAsyncEnumerable<int> Numbers(int upTo, [EnumeratorCancellation] CancellationToken ct = default)
    {
        for (int i = 1; i <= upTo; i++)
        {
            ct.ThrowIfCancellationRequested();
            yield return i;
            await Task.Yield();
        }
    }

    private async Task UploadSum()
    {
        var (c, _) = await _connections.ConnectChat();
        await using var __ = c;
        Check.Equal(55L, await c.InvokeAsync<long>("Sum", Numbers(10)).WaitAsync(Timeout), "Sum of 1..10 (IAsyncEnumerable)");

        var channel = Channel.CreateUnbounded<int>();
        var sum = c.InvokeAsync<long>("Sum", channel.Reader);
        foreach (int n in new[] { 100, -1, 2 })
            await channel.Writer.WriteAsync(n);
        channel.Writer.Complete();
        Check.Equal(101L, await sum.WaitAsync(Timeout), "Sum of a channel");

        var empty = Channel.CreateUnbounded<int>();
        empty.Writer.Complete();
        Check.Equal(0L, await c.InvokeAsync<long>("Sum", empty.Reader).WaitAsync(Timeout), "Sum of nothing");
    }

    private async Task<DisconnectInfo> DisconnectSeenByBackend(string backendId)
    {
        var (probe, _) = await _connections.ConnectChat();
        await using var _ = probe;
        return await Connections.PollUntil(() => probe.InvokeAsync<DisconnectInfo>("GetDisconnectInfo", backendId),
            info => info.disconnected, $"OnDisconnectedAsync for {backendId}");
    }

    private async Task AbortMe()
    {
        var (c, backendId) = await _connections.ConnectChat();
        await using var _ = c;
        var closed = new TaskCompletionSource<Exception?>(TaskCreationOptions.RunContinuationsAsynchronously);
        c.Closed += e =>
        {
            closed.TrySetResult(e);
            return Task.CompletedTask;
        };
        await c.SendAsync("AbortMe");
        var error = await closed.Task.WaitAsync(Timeout);
        Check.Equal(null, error?.Message, "Closed error after a server abort");
        Check.Equal(HubConnectionState.Disconnected, c.State, "state after a server abort");
        var info = await DisconnectSeenByBackend(backendId);
        Check.Equal("chat", info.hub, "disconnect hub");
        Check.Equal(null, info.error, "disconnect error");
    }

    private async Task StopRunsOnDisconnected()
    {
        var (c, backendId) = await _connections.ConnectChat();
        await using var _ = c;
        // The client raises Closed on another task, possibly after StopAsync has returned.
        var closed = new TaskCompletionSource<Exception?>(TaskCreationOptions.RunContinuationsAsynchronously);
        c.Closed += e =>
        {
            closed.TrySetResult(e);
            return Task.CompletedTask;
        };
        await c.StopAsync().WaitAsync(Timeout);
        Check.Equal(null, (await closed.Task.WaitAsync(Timeout))?.Message, "Closed error after StopAsync");
        var info = await DisconnectSeenByBackend(backendId);
        Check.Equal("chat", info.hub, "disconnect hub");
        Check.Equal(null, info.error, "disconnect error");
    }

    private async Task SkipNegotiation()
    {
        var (c, backendId) = await _connections.ConnectChat(skipNegotiation: true);
        await using var _ = c;
        Check.Matches(ConnectionIdPattern, backendId, "welcome id");
        Check.Equal(null, c.ConnectionId, "client-side connection id without negotiate");
        var who = await c.InvokeAsync<CallerInfo>("WhoAmI");
        Check.Equal("WebSockets", who.transport, "transport");
        Check.Equal(backendId, who.connectionId, "WhoAmI connectionId");
        Check.Equal("no negotiate", await c.InvokeAsync<string>("Echo", "no negotiate"), "Echo");
    }

    private static readonly Dictionary<string, string> TransportJson = new()
    {
        ["WebSockets"] = "{\"transport\":\"WebSockets\",\"transferFormats\":[\"Text\",\"Binary\"]}",
        ["ServerSentEvents"] = "{\"transport\":\"ServerSentEvents\",\"transferFormats\":[\"Text\"]}",
        ["LongPolling"] = "{\"transport\":\"LongPolling\",\"transferFormats\":[\"Text\",\"Binary\"]}",
    };

    private string ExpectedTransports => "[" + string.Join(",", _env.ExpectTransports.Select(t => TransportJson[t])) + "]";

    private async Task<JsonElement> Negotiate(string query)
    {
        using var http = new HttpClient();
        using var response = await http.PostAsync(_env.BaseUrl + "/chat/negotiate" + query, new ByteArrayContent(Array.Empty<byte>()));
        Check.Equal(HttpStatusCode.OK, response.StatusCode, "negotiate status");
        Check.Equal("application/json", response.Content.Headers.ContentType?.MediaType, "negotiate content type");
        using var doc = JsonDocument.Parse(await response.Content.ReadAsStringAsync());
        return doc.RootElement.Clone();
    }

    private static string[] PropertyNames(JsonElement e) => e.EnumerateObject().Select(p => p.Name).ToArray();

    private async Task NegotiateV1()
    {
        var body = await Negotiate("?negotiateVersion=1");
        Check.SequenceEqual(new[] { "negotiateVersion", "connectionId", "connectionToken", "availableTransports" },
            PropertyNames(body), "v1 properties");
        Check.Equal(1, body.GetProperty("negotiateVersion").GetInt32(), "negotiateVersion");
        string id = body.GetProperty("connectionId").GetString()!;
        string token = body.GetProperty("connectionToken").GetString()!;
        Check.Matches(ConnectionIdPattern, id, "connectionId");
        Check.Matches(ConnectionIdPattern, token, "connectionToken");
        Check.True(id != token, "connectionToken differs from connectionId");
        Check.Equal(ExpectedTransports, body.GetProperty("availableTransports").GetRawText(), "availableTransports");
    }

    private async Task NegotiateV0()
    {
        foreach (string query in new[] { "?negotiateVersion=0", "" })
        {
            var body = await Negotiate(query);
            Check.SequenceEqual(new[] { "negotiateVersion", "connectionId", "availableTransports" },
                PropertyNames(body), $"v0 properties (negotiate{query})");
            Check.Equal(0, body.GetProperty("negotiateVersion").GetInt32(), "negotiateVersion");
            Check.Matches(ConnectionIdPattern, body.GetProperty("connectionId").GetString(), "connectionId");
            Check.Equal(ExpectedTransports, body.GetProperty("availableTransports").GetRawText(), "availableTransports");
        }
    }

    private async Task SecureGoodToken()
    {
        int asked = 0;
        await using var c = _connections.Build("/secure", o => o.AccessTokenProvider = () =>
        {
            Interlocked.Increment(ref asked);
            return Task.FromResult<string?>("good-token");
        });
        await c.StartAsync().WaitAsync(Timeout);
        var who = await c.InvokeAsync<CallerInfo>("WhoAmI");
        Check.Equal("secure", who.hub, "hub");
        Check.Equal("good-user", who.user, "user");
        Check.Equal(_env.BackendTransportName, who.transport, "transport");
        // The .NET client sends the token as a header on every transport (outside browsers).
        Check.Equal("Bearer good-token", who.authorization, "Authorization header seen by the backend");
        Check.Equal(null, who.accessToken, "access_token query seen by the backend");
        Check.True(asked >= 1, "AccessTokenProvider was called");
        Check.SequenceEqual(new[] { 1, 2 }, await c.InvokeAsync<int[]>("Echo", new[] { 1, 2 }), "Echo on /secure");
    }

    private async Task SecureBadToken()
    {
        foreach (string? token in new[] { "bad-token", null })
        {
            await using var c = _connections.Build("/secure", o =>
            {
                if (token is not null)
                    o.AccessTokenProvider = () => Task.FromResult<string?>(token);
            });
            var e = await Check.Throws<HttpRequestException>(() => c.StartAsync().WaitAsync(Timeout),
                $"start /secure with token {token ?? "(none)"}");
            Check.Equal(HttpStatusCode.Unauthorized, e.StatusCode, "negotiate status");
        }

        // Without negotiate the backend refuses the WebSocket upgrade. A relay must accept the
        // client's upgrade before it can ask the backend, so through it the refusal arrives as the
        // handshake answer instead, naming the backend's 401.
        await using var direct = _connections.Build("/secure",
            o => o.AccessTokenProvider = () => Task.FromResult<string?>("bad-token"), skipNegotiation: true);
        if (_env.Direct)
        {
            var ws = await Check.Throws<WebSocketException>(() => direct.StartAsync().WaitAsync(Timeout),
                "start /secure without negotiate, bad token");
            Check.Matches("'401'", ws.Message, "WebSocket upgrade refusal");
        }
        else
        {
            var hs = await Check.ThrowsAny(() => direct.StartAsync().WaitAsync(Timeout),
                "start /secure without negotiate, bad token");
            Check.Matches(@"\b401\b", hs.Message, "handshake refusal through the relay");
        }
    }

    private async Task WhoAmITag()
    {
        string tag = Connections.UniqueName("tag");
        var (c, backendId) = await _connections.ConnectChat("/chat?tag=" + Uri.EscapeDataString(tag),
            o => o.AccessTokenProvider = () => Task.FromResult<string?>("good-token"));
        await using var _ = c;
        var who = await c.InvokeAsync<CallerInfo>("WhoAmI");
        Check.Equal("chat", who.hub, "hub");
        Check.Equal(tag, who.tag, "tag");
        Check.Equal(backendId, who.connectionId, "connectionId");
        Check.Equal(_env.BackendTransportName, who.transport, "transport");
        Check.Equal("good-user", who.user, "user");
        Check.Equal("Bearer good-token", who.authorization, "Authorization header");
        Check.Matches(@"^Microsoft SignalR/10\.0 \(10\.0\.12", who.userAgent, "User-Agent");
        if (_env.Direct)
            Check.Equal(null, who.forwardedFor, "X-Forwarded-For");
        else if (_env.ExpectForwardedFor is not null)
            Check.Equal(_env.ExpectForwardedFor, who.forwardedFor, "X-Forwarded-For");
    }
}
