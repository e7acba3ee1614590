// Minimal bearer-token authentication for the tests: exactly one valid token ("good-token"),
// read from the Authorization header or, as the JwtBearer OnMessageReceived pattern does for
// WebSockets and Server-Sent Events, from the access_token query parameter.
using System.Security.Claims;
using System.Text.Encodings.Web;
using Microsoft.AspNetCore.Authentication;
using Microsoft.Extensions.Options;

namespace SignalrRelay.TestBackend;

public sealed class TestTokenAuthHandler : AuthenticationHandler<AuthenticationSchemeOptions>
{
    public const string SchemeName = "TestToken";
    public const string ValidToken = "good-token";
    public const string UserName = "good-user";

    public TestTokenAuthHandler(IOptionsMonitor<AuthenticationSchemeOptions> options,
                                ILoggerFactory logger, UrlEncoder encoder)
        : base(options, logger, encoder)
    {
    }

    protected override Task<AuthenticateResult> HandleAuthenticateAsync()
    {
        var token = TokenFromRequest(Request);
        if (token is null)
            return Task.FromResult(AuthenticateResult.NoResult());
        if (token != ValidToken)
            return Task.FromResult(AuthenticateResult.Fail("invalid token"));

        var identity = new ClaimsIdentity(
            new[] { new Claim(ClaimTypes.Name, UserName), new Claim(ClaimTypes.NameIdentifier, UserName) },
            SchemeName);
        var ticket = new AuthenticationTicket(new ClaimsPrincipal(identity), SchemeName);
        return Task.FromResult(AuthenticateResult.Success(ticket));
    }

    // As JwtBearer does: 401 with a Bearer challenge.
    protected override Task HandleChallengeAsync(AuthenticationProperties properties)
    {
        Response.StatusCode = StatusCodes.Status401Unauthorized;
        Response.Headers.WWWAuthenticate = "Bearer";
        return Task.CompletedTask;
    }

    // Header first; the query value is what browsers (and some transports) must use instead.
    private static string? TokenFromRequest(HttpRequest request)
    {
        string header = request.Headers.Authorization.ToString();
        const string bearer = "Bearer ";
        if (header.StartsWith(bearer, StringComparison.OrdinalIgnoreCase))
            return header.Substring(bearer.Length).Trim();

        string query = request.Query["access_token"].ToString();
        return query.Length > 0 ? query : null;
    }
}
