// Builds the answer of WhoAmI: what the app sees of the caller as the SDK reconstructed it from
// the service's OpenConnection (claims, user id, query, headers, remote address). Dictionaries
// with explicit keys, because the JSON protocol camel-cases property names but MessagePack does
// not: a dictionary gives both protocols the same keys.
using System.Security.Claims;
using Microsoft.AspNetCore.SignalR;

namespace SignalrRelay.ServiceApp;

public static class CallerInfo
{
    public static Dictionary<string, object?> Describe(HubCallerContext context, string hub)
    {
        var http = context.GetHttpContext();
        var request = http?.Request;
        var user = context.User;
        string? queryString = null;
        try
        {
            queryString = request?.QueryString.Value;
        }
        catch (Exception e)
        {
            // Request.QueryString throws on a query without a leading '?'.
            queryString = "<error: " + e.GetType().Name + ">";
        }
        return new Dictionary<string, object?>
        {
            ["hub"] = hub,
            ["connectionId"] = context.ConnectionId,
            ["userIdentifier"] = context.UserIdentifier,
            ["isAuthenticated"] = user?.Identity?.IsAuthenticated ?? false,
            ["authenticationType"] = user?.Identity?.AuthenticationType,
            ["name"] = user?.Identity?.Name,
            ["nameIdentifier"] = user?.FindFirst(ClaimTypes.NameIdentifier)?.Value,
            ["isAdmin"] = user?.IsInRole("admin") ?? false,
            // [type, value] pairs in order; a type may repeat.
            ["claims"] = user?.Claims.Select(c => new[] { c.Type, c.Value }).ToArray() ?? Array.Empty<string[]>(),
            ["path"] = request?.Path.Value,
            ["queryString"] = queryString,
            ["query"] = request?.Query.ToDictionary(q => q.Key, q => q.Value.ToArray()),
            ["headers"] = request?.Headers.ToDictionary(h => h.Key, h => h.Value.ToArray()),
            ["remoteIp"] = http?.Connection.RemoteIpAddress?.ToString(),
        };
    }
}
