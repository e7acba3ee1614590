// The reference hubs: the test backend's hubs (tests/backend/Hubs/*.cs, ASP.NET Core) written
// against the legacy Microsoft.AspNet.SignalR Hub API, with the same class names (the hub names
// the legacy clients use: ChatHub, StatusHub, SecureHub; matched case-insensitively by SignalR)
// and the same method names and answers, so that the legacy suites written for the relay can run
// against the real legacy server unchanged.
//
// What legacy SignalR cannot express, and how it is mirrored or left out:
//   Counter     a Core server-to-client stream; here IProgress<int> reports ("P" messages), the
//               form in which the relay delivers stream items to legacy clients; the invocation
//               then completes with no result.
//   Sum         a client-to-server stream: no legacy equivalent, not provided.
//   AskClient   a client result (.NET 7+): no legacy equivalent, not provided.
//   AbortMe     Context.Abort(): the legacy Hub API has no public way to end its own connection
//               (the abort command is internal to SignalR.Core), not provided; no legacy
//               scenario calls it.
//   WhoAmI      "transport" is the legacy transport name from the query string (webSockets,
//               serverSentEvents, longPolling, foreverFrame) rather than Core's HttpTransportType.
using System;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.Linq;
using System.Threading;
using System.Threading.Tasks;
using Microsoft.AspNet.SignalR;
using Microsoft.AspNet.SignalR.Hubs;

namespace SignalrRelay.LegacyRef
{
    public static class Observations
    {
        private sealed class DisconnectRecord
        {
            public string Hub;
            public string Error;
        }

        private static readonly ConcurrentDictionary<string, DisconnectRecord> Disconnects = new ConcurrentDictionary<string, DisconnectRecord>();
        private static readonly ConcurrentDictionary<string, string> Streams = new ConcurrentDictionary<string, string>();
        private static int _disconnectCount;

        // Core's OnDisconnectedAsync(exception) gets null for a clean close; legacy OnDisconnected
        // says instead whether the client called stop (true) or the server timed it out (false).
        public static void RecordDisconnect(string connectionId, string hub, bool stopCalled)
        {
            Disconnects[connectionId] = new DisconnectRecord
            {
                Hub = hub,
                Error = stopCalled ? null : "the client went away without stop (disconnect timeout)",
            };
            Interlocked.Increment(ref _disconnectCount);
        }

        public static int DisconnectCount { get { return Volatile.Read(ref _disconnectCount); } }

        public static Dictionary<string, object> DescribeDisconnect(string connectionId)
        {
            DisconnectRecord record = null;
            bool found = connectionId != null && Disconnects.TryGetValue(connectionId, out record);
            return new Dictionary<string, object>
            {
                { "disconnected", found },
                { "hub", record == null ? null : record.Hub },
                { "error", record == null ? null : record.Error },
            };
        }

        public static void RecordStream(string connectionId, string status) { Streams[connectionId] = status; }

        public static string StreamStatusOf(string connectionId)
        {
            string status;
            return Streams.TryGetValue(connectionId, out status) ? status : "none";
        }

        public static Dictionary<string, object> Describe(HubCallerContext context, string hub)
        {
            var user = context.User;
            return new Dictionary<string, object>
            {
                { "hub", hub },
                { "connectionId", context.ConnectionId },
                { "tag", ValueOrNull(context.QueryString["tag"]) },
                { "authorization", ValueOrNull(context.Headers["Authorization"]) },
                { "accessToken", ValueOrNull(context.QueryString["access_token"]) },
                { "forwardedFor", ValueOrNull(context.Headers["X-Forwarded-For"]) },
                { "user", user != null && user.Identity != null && user.Identity.IsAuthenticated ? user.Identity.Name : null },
                { "transport", ValueOrNull(context.QueryString["transport"]) },
                { "userAgent", ValueOrNull(context.Headers["User-Agent"]) },
            };
        }

        public static Dictionary<string, object> DescribeRequest(HubCallerContext context)
        {
            object remote;
            context.Request.Environment.TryGetValue("server.RemoteIpAddress", out remote);
            return new Dictionary<string, object>
            {
                { "cookie", ValueOrNull(context.Headers["Cookie"]) },
                { "remoteAddress", remote as string },
            };
        }

        private static string ValueOrNull(string value) { return string.IsNullOrEmpty(value) ? null : value; }
    }

    public sealed class ChatHub : Hub
    {
        public override Task OnConnected()
        {
            Clients.Caller.welcome(Context.ConnectionId);
            return base.OnConnected();
        }

        public override Task OnDisconnected(bool stopCalled)
        {
            Observations.RecordDisconnect(Context.ConnectionId, "chat", stopCalled);
            return base.OnDisconnected(stopCalled);
        }

        // `object` binds to Json.NET's values: JObject/JArray, long, BigInteger, double, string,
        // bool, null; each serializes back to the same JSON. A null result leaves "R" out.
        public object Echo(object value) { return value; }

        public object[] EchoMany(object a, object b, object c) { return new[] { a, b, c }; }

        public int Add(int a, int b) { return a + b; }

        public string Repeat(string text, int count) { return string.Concat(Enumerable.Repeat(text, count)); }

        public void VoidMethod() { }

        public void ThrowHubException(string message) { throw new HubException(message); }

        public void ThrowOther() { throw new InvalidOperationException("this text must not reach the client"); }

        public Task Broadcast(string message) { return Clients.All.broadcast(message); }

        public Task JoinGroup(string group) { return Groups.Add(Context.ConnectionId, group); }

        public Task LeaveGroup(string group) { return Groups.Remove(Context.ConnectionId, group); }

        public Task SendToGroup(string group, string message) { return Clients.Group(group).groupMessage(group, message); }

        // The Core backend's stream of 0..count-1, one item every delayMs, as progress reports.
        public async Task Counter(int count, int delayMs, IProgress<int> progress)
        {
            string connectionId = Context.ConnectionId;
            Observations.RecordStream(connectionId, "running");
            for (int i = 0; i < count; i++)
            {
                progress.Report(i);
                if (delayMs > 0)
                    await Task.Delay(delayMs);
            }
            Observations.RecordStream(connectionId, "completed");
        }

        public string GetStreamStatus() { return Observations.StreamStatusOf(Context.ConnectionId); }

        public Dictionary<string, object> WhoAmI() { return Observations.Describe(Context, "chat"); }

        // The backend's RequestDetails: the Cookie header of the request that runs the hub call
        // (over serverSentEvents and longPolling the /send, which carries the page's cookies) and
        // the peer's address as the host saw it.
        public Dictionary<string, object> RequestDetails() { return Observations.DescribeRequest(Context); }

        public Dictionary<string, object> GetDisconnectInfo(string connectionId) { return Observations.DescribeDisconnect(connectionId); }

        public int GetDisconnectCount() { return Observations.DisconnectCount; }
    }

    public sealed class StatusHub : Hub
    {
        private static int _connected;

        public override Task OnConnected()
        {
            Interlocked.Increment(ref _connected);
            Clients.Caller.status(new Dictionary<string, object>
            {
                { "hub", "status" },
                { "connectionId", Context.ConnectionId },
            });
            return base.OnConnected();
        }

        public override Task OnDisconnected(bool stopCalled)
        {
            Interlocked.Decrement(ref _connected);
            Observations.RecordDisconnect(Context.ConnectionId, "status", stopCalled);
            return base.OnDisconnected(stopCalled);
        }

        public object Echo(object value) { return value; }

        public Dictionary<string, object> GetStatus()
        {
            return new Dictionary<string, object>
            {
                { "hub", "status" },
                { "connectionId", Context.ConnectionId },
                { "connected", Volatile.Read(ref _connected) },
            };
        }

        public Dictionary<string, object> WhoAmI() { return Observations.Describe(Context, "status"); }
    }

    // Behind [Authorize]: the host's test-token middleware (Program.cs) sets the user for
    // "Authorization: Bearer good-token" or ?access_token=good-token.
    [Authorize]
    public sealed class SecureHub : Hub
    {
        public override Task OnDisconnected(bool stopCalled)
        {
            Observations.RecordDisconnect(Context.ConnectionId, "secure", stopCalled);
            return base.OnDisconnected(stopCalled);
        }

        public object Echo(object value) { return value; }

        public Dictionary<string, object> WhoAmI() { return Observations.Describe(Context, "secure"); }
    }
}
