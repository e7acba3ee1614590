// The real ASP.NET SignalR 2.4.1 server (unmodified Microsoft.AspNet.SignalR.Core) on Mono, as a
// test reference for the relay's legacy endpoint:
//
//   mono LegacyRef.exe --port N [--host 127.0.0.1] [--path /signalr] [--detailed-errors]
//                      [--try-websockets] [--trace]
//
// Serves app.MapSignalR(path, new HubConfiguration { ... }) with the hubs of Hubs.cs, prints
// "legacy-ref listening on http://HOST:PORT/signalr ..." once it accepts requests, and runs until
// SIGTERM or SIGINT.
//   --detailed-errors  HubConfiguration.EnableDetailedErrors (default off, as in production)
//   --try-websockets   advertise WebSockets (server.Capabilities), so negotiate says
//                      TryWebSockets true as it would on IIS 8; the upgrade itself then fails
//                      with SignalR's own "400 Not a valid web socket request." (Mono's
//                      HttpListener cannot hand over the connection) and clients fall back
//   --trace            SignalR's trace sources (connections, transports, messages) on stderr
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Reflection;
using System.Security.Principal;
using System.Threading;
using System.Threading.Tasks;
using Microsoft.AspNet.SignalR;

namespace SignalrRelay.LegacyRef
{
    using AppFunc = Func<IDictionary<string, object>, Task>;

    public static class Program
    {
        private const string ValidToken = "good-token";
        private const string UserName = "good-user";

        public static int Main(string[] args)
        {
            string host = "127.0.0.1", path = "/signalr";
            int port = 0;
            bool detailedErrors = false, tryWebSockets = false, trace = false;
            for (int i = 0; i < args.Length; i++)
            {
                switch (args[i])
                {
                    case "--port": port = int.Parse(args[++i]); break;
                    case "--host": host = args[++i]; break;
                    case "--path": path = args[++i]; break;
                    case "--detailed-errors": detailedErrors = true; break;
                    case "--try-websockets": tryWebSockets = true; break;
                    case "--trace": trace = true; break;
                    default:
                        Console.Error.WriteLine("usage: mono LegacyRef.exe --port N [--host H] [--path /signalr] [--detailed-errors] [--try-websockets] [--trace]");
                        return 2;
                }
            }
            if (port <= 0)
            {
                Console.Error.WriteLine("--port is required");
                return 2;
            }

            // Long polls and event streams hold requests; SignalR is asynchronous, but the host
            // writes synchronously, so keep enough pool threads at hand.
            ThreadPool.SetMinThreads(64, 64);

            var shutdown = new CancellationTokenSource();
            var builder = new OwinAppBuilder();
            builder.Properties["host.AppName"] = "signalr-legacy-ref";
            builder.Properties["host.OnAppDisposing"] = shutdown.Token;
            builder.Properties["host.TraceOutput"] = Console.Error;

            builder.Use(TestTokenAuthentication);
            var configuration = new HubConfiguration
            {
                EnableDetailedErrors = detailedErrors,
                EnableJavaScriptProxies = true,
            };
            builder.Extend(typeof(Owin.OwinExtensions), "MapSignalR", path, configuration);
            if (trace)
            {
                // MapSignalR registered a TraceManager writing to host.TraceOutput (stderr); its
                // sources are off until the shared switch says otherwise.
                var manager = (Microsoft.AspNet.SignalR.Tracing.ITraceManager)configuration.Resolver.GetService(typeof(Microsoft.AspNet.SignalR.Tracing.ITraceManager));
                manager.Switch.Level = SourceLevels.Verbose;
            }
            AppFunc app = builder.Build();

            using (var server = new OwinHttpListenerServer(app, tryWebSockets, Console.Error))
            {
                server.Start(host, port);
                Console.WriteLine("legacy-ref listening on http://{0}:{1}{2} (Microsoft.AspNet.SignalR.Core {3}, runtime {4})",
                                  host, port, path, typeof(Hub).Assembly.GetName().Version, RuntimeName());
                Console.Out.Flush();

                // SIGTERM ends the process (Mono's default); Ctrl-C stops it here.
                var stop = new ManualResetEventSlim();
                Console.CancelKeyPress += (s, e) => { e.Cancel = true; stop.Set(); };
                stop.Wait();
                shutdown.Cancel();
            }
            return 0;
        }

        private static string RuntimeName()
        {
            var mono = Type.GetType("Mono.Runtime");
            var display = mono == null ? null : mono.GetMethod("GetDisplayName", BindingFlags.NonPublic | BindingFlags.Static);
            return display != null ? "Mono " + display.Invoke(null, null) : Environment.Version.ToString();
        }

        // The test backend's token rule (tests/backend/TestTokenAuthHandler.cs): "good-token" in
        // "Authorization: Bearer" or in ?access_token makes the request good-user's.
        private static AppFunc TestTokenAuthentication(AppFunc next)
        {
            return env =>
            {
                string token = null;
                var headers = (IDictionary<string, string[]>)env["owin.RequestHeaders"];
                string[] authorization;
                if (headers.TryGetValue("Authorization", out authorization) && authorization.Length > 0 &&
                    authorization[0].StartsWith("Bearer ", StringComparison.OrdinalIgnoreCase))
                    token = authorization[0].Substring(7).Trim();
                if (token == null)
                {
                    foreach (string pair in ((string)env["owin.RequestQueryString"]).Split('&'))
                    {
                        if (pair.StartsWith("access_token=", StringComparison.Ordinal))
                            token = Uri.UnescapeDataString(pair.Substring(13).Replace('+', ' '));
                    }
                }
                if (token == ValidToken)
                    env["server.User"] = new GenericPrincipal(new GenericIdentity(UserName, "TestToken"), new string[0]);
                return next(env);
            };
        }
    }
}
