// Builds the answers of WhoAmI / GetDisconnectInfo. Dictionaries with explicit lower-case keys,
// because the JSON protocol camel-cases property names but MessagePack does not: a dictionary
// gives both protocols the same keys.
using Microsoft.AspNetCore.Http.Connections.Features;
using Microsoft.AspNetCore.SignalR;

namespace SignalrRelay.TestBackend;

public static class CallerInfo
{
    public static Dictionary<string, object?> Describe(HubCallerContext context, string hub)
    {
        var http = context.GetHttpContext();
        var request = http?.Request;
        return new Dictionary<string, object?>
        {
            ["hub"] = hub,
            ["connectionId"] = context.ConnectionId,
            ["tag"] = ValueOrNull(request?.Query["tag"].ToString()),
            ["authorization"] = ValueOrNull(request?.Headers.Authorization.ToString()),
            ["accessToken"] = ValueOrNull(request?.Query["access_token"].ToString()),
            ["forwardedFor"] = ValueOrNull(request?.Headers["X-Forwarded-For"].ToString()),
            ["user"] = context.User?.Identity?.IsAuthenticated == true ? context.User.Identity.Name : null,
            ["transport"] = context.Features.Get<IHttpTransportFeature>()?.TransportType.ToString(),
            ["userAgent"] = ValueOrNull(request?.Headers.UserAgent.ToString()),
        };
    }

    // What WhoAmI leaves out (its member set is part of recorded fixtures): the Cookie header as
    // it arrived, the TCP peer the server sees (a relay's backend link shows its own source
    // address there, --backend-source-addresses), and the port it was reached on (which of
    // several backend processes served the call: tests/relay/test/backend-instances.test.mjs).
    public static Dictionary<string, object?> DescribeRequest(HubCallerContext context)
    {
        var http = context.GetHttpContext();
        return new Dictionary<string, object?>
        {
            ["cookie"] = ValueOrNull(http?.Request.Headers.Cookie.ToString()),
            ["remoteAddress"] = http?.Connection.RemoteIpAddress?.ToString(),
            ["localPort"] = http?.Connection.LocalPort,
        };
    }

    public static Dictionary<string, object?> DescribeDisconnect(string connectionId)
    {
        bool found = Observations.TryGetDisconnect(connectionId, out var record);
        return new Dictionary<string, object?>
        {
            ["disconnected"] = found,
            ["hub"] = record?.Hub,
            ["error"] = record?.Error,
        };
    }

    private static string? ValueOrNull(string? value) => string.IsNullOrEmpty(value) ? null : value;
}
