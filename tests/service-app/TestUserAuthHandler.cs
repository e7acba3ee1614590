// Test authentication for the app's negotiate endpoint (the only request clients make to the app
// in service mode). The client says who it is, either as `?user=NAME` (plus optional repeated
// `&role=R`) or as `Authorization: Bearer NAME` (what accessTokenFactory sends). The identity
// carries NameIdentifier = NAME, so the SDK's default user id provider puts it in the client
// token as `asrs.s.uid` and `Clients.User(NAME)` reaches it through the service. No credentials
// at all = anonymous (allowed on /board, 401 on /ops).
using System.Security.Claims;
using System.Text.Encodings.Web;
using Microsoft.AspNetCore.Authentication;
using Microsoft.Extensions.Options;

namespace SignalrRelay.ServiceApp;

public sealed class TestUserAuthHandler : AuthenticationHandler<AuthenticationSchemeOptions>
{
    public const string SchemeName = "TestUser";
    // A custom claim so tests can see non-standard claim types travel through the client token.
    public const string BoardUserClaim = "board.user";

    public TestUserAuthHandler(IOptionsMonitor<AuthenticationSchemeOptions> options,
                               ILoggerFactory logger, UrlEncoder encoder)
        : base(options, logger, encoder)
    {
    }

    protected override Task<AuthenticateResult> HandleAuthenticateAsync()
    {
        string? user = UserFromRequest(Request);
        if (user is null)
            return Task.FromResult(AuthenticateResult.NoResult());

        var claims = new List<Claim>
        {
            new(ClaimTypes.NameIdentifier, user),
            new(ClaimTypes.Name, user),
            new(BoardUserClaim, user),
        };
        foreach (string? role in Request.Query["role"])
        {
            if (!string.IsNullOrEmpty(role))
                claims.Add(new Claim(ClaimTypes.Role, role));
        }
        var identity = new ClaimsIdentity(claims, SchemeName);
        var ticket = new AuthenticationTicket(new ClaimsPrincipal(identity), SchemeName);
        return Task.FromResult(AuthenticateResult.Success(ticket));
    }

    protected override Task HandleChallengeAsync(AuthenticationProperties properties)
    {
        Response.StatusCode = StatusCodes.Status401Unauthorized;
        Response.Headers.WWWAuthenticate = "Bearer";
        return Task.CompletedTask;
    }

    private static string? UserFromRequest(HttpRequest request)
    {
        string query = request.Query["user"].ToString();
        if (query.Length > 0)
            return query;
        string header = request.Headers.Authorization.ToString();
        const string bearer = "Bearer ";
        if (header.StartsWith(bearer, StringComparison.OrdinalIgnoreCase))
        {
            string token = header.Substring(bearer.Length).Trim();
            return token.Length > 0 ? token : null;
        }
        return null;
    }
}
