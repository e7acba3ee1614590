// The small OWIN host that the Katana packages would otherwise provide (Microsoft.Owin.Hosting and
// Microsoft.Owin.Host.HttpListener are not served by the package feed here): System.Net.HttpListener
// requests turned into OWIN environment dictionaries for the application that Microsoft.Owin's own
// AppBuilder (Microsoft.Owin.Builder.AppBuilder, in the unmodified Microsoft.Owin 4.2.2 assembly)
// builds from `app.MapSignalR(...)`.
//
// The IAppBuilder interface is never named in this code: the Owin stand-in in shim/ is unsigned,
// which Mono's loader accepts but the C# compiler does not (Microsoft.Owin and SignalR reference
// Owin by its public key token), so the builder is driven through reflection.
//
// What it provides per request, as Katana's HttpListener host does:
//   owin.Version, owin.RequestMethod/Scheme/PathBase/Path/QueryString/Protocol/Headers/Body,
//   owin.CallCancelled, owin.ResponseStatusCode/ReasonPhrase/Headers/Body,
//   server.RemoteIpAddress/RemotePort/LocalIpAddress/LocalPort/IsLocal, server.User,
//   server.OnSendingHeaders, host.TraceOutput, host.AppName, host.OnAppDisposing and,
//   with --try-websockets only, server.Capabilities["websocket.Version"] (without websocket.Accept,
//   since Mono's HttpListener cannot hand over an upgraded connection).
// Differences from Katana: a client that goes away is noticed only when a write to it fails
// (owin.CallCancelled is then cancelled); HttpListener gives no disconnect notification on Mono.
using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Net;
using System.Reflection;
using System.Threading;
using System.Threading.Tasks;

namespace SignalrRelay.LegacyRef
{
    using AppFunc = Func<IDictionary<string, object>, Task>;

    // Microsoft.Owin.Builder.AppBuilder through reflection (see the note at the top).
    public sealed class OwinAppBuilder
    {
        private readonly object _builder;
        private readonly Type _builderType;

        public OwinAppBuilder()
        {
            _builderType = Type.GetType("Microsoft.Owin.Builder.AppBuilder, Microsoft.Owin", throwOnError: true);
            _builder = Activator.CreateInstance(_builderType);
        }

        public object Instance { get { return _builder; } }

        public IDictionary<string, object> Properties
        {
            get { return (IDictionary<string, object>)_builderType.GetProperty("Properties").GetValue(_builder, null); }
        }

        // app.Use(middleware): here always a Func<AppFunc, AppFunc>.
        public void Use(Func<AppFunc, AppFunc> middleware)
        {
            _builderType.GetMethod("Use").Invoke(_builder, new object[] { middleware, new object[0] });
        }

        // Calls a static extension method `name(IAppBuilder, args...)` of `type`, e.g.
        // Owin.OwinExtensions.MapSignalR(app, "/signalr", hubConfiguration).
        public void Extend(Type type, string name, params object[] args)
        {
            var method = type.GetMethods(BindingFlags.Public | BindingFlags.Static).Single(m =>
            {
                var p = m.GetParameters();
                return m.Name == name && !m.IsGenericMethodDefinition && p.Length == args.Length + 1 &&
                       p[0].ParameterType.FullName == "Owin.IAppBuilder" &&
                       p.Skip(1).Select((q, i) => args[i] == null || q.ParameterType.IsInstanceOfType(args[i])).All(ok => ok);
            });
            method.Invoke(null, new[] { _builder }.Concat(args).ToArray());
        }

        public AppFunc Build()
        {
            return (AppFunc)_builderType.GetMethod("Build").Invoke(_builder, new object[] { typeof(AppFunc) });
        }
    }

    public sealed class OwinHttpListenerServer : IDisposable
    {
        private readonly HttpListener _listener = new HttpListener();
        private readonly AppFunc _app;
        private readonly bool _advertiseWebSockets;
        private readonly TextWriter _trace;

        public OwinHttpListenerServer(AppFunc app, bool advertiseWebSockets, TextWriter trace)
        {
            _app = app;
            _advertiseWebSockets = advertiseWebSockets;
            _trace = trace;
        }

        public void Start(string host, int port)
        {
            _listener.Prefixes.Add("http://" + host + ":" + port + "/");
            _listener.IgnoreWriteExceptions = false;
            _listener.Start();
            Task.Run(AcceptLoop);
        }

        private async Task AcceptLoop()
        {
            while (_listener.IsListening)
            {
                HttpListenerContext context;
                try
                {
                    context = await _listener.GetContextAsync().ConfigureAwait(false);
                }
                catch (Exception) when (!_listener.IsListening)
                {
                    return;
                }
                catch (Exception e)
                {
                    _trace.WriteLine("accept failed: " + e.Message);
                    continue;
                }
                Forget(Task.Run(() => new Exchange(this, context).Run()));
            }
        }

        private static void Forget(Task task) { }

        public void Dispose()
        {
            try { _listener.Stop(); } catch (Exception) { }
            try { _listener.Close(); } catch (Exception) { }
        }

        // One request/response: the OWIN environment, the response start (status and headers go
        // out with the first body byte, a flush, or the end), the end, and failures.
        private sealed class Exchange
        {
            private readonly OwinHttpListenerServer _server;
            private readonly HttpListenerContext _context;
            private readonly Dictionary<string, object> _env = new Dictionary<string, object>(StringComparer.Ordinal);
            private readonly Dictionary<string, string[]> _responseHeaders = new Dictionary<string, string[]>(StringComparer.OrdinalIgnoreCase);
            private readonly List<KeyValuePair<Action<object>, object>> _onSendingHeaders = new List<KeyValuePair<Action<object>, object>>();
            private readonly CancellationTokenSource _cancelled = new CancellationTokenSource();
            private readonly object _startLock = new object();
            private bool _started;

            public Exchange(OwinHttpListenerServer server, HttpListenerContext context)
            {
                _server = server;
                _context = context;
            }

            public async Task Run()
            {
                var request = _context.Request;
                try
                {
                    FillEnvironment(request);
                    await _server._app(_env).ConfigureAwait(false);
                    Start();
                    _context.Response.Close();
                }
                catch (Exception e)
                {
                    bool started;
                    lock (_startLock) started = _started;
                    if (!started && !IsClientGone(e))
                    {
                        // As Katana's host: an exception before the response started is a 500 with
                        // an empty body.
                        _server._trace.WriteLine("{0} {1}: 500 from {2}: {3}", request.HttpMethod, request.RawUrl, e.GetType().Name, e.Message);
                        try
                        {
                            _context.Response.StatusCode = 500;
                            _context.Response.ContentLength64 = 0;
                            _context.Response.Close();
                        }
                        catch (Exception) { Abort(); }
                    }
                    else
                    {
                        Abort();
                    }
                }
                finally
                {
                    _cancelled.Dispose();
                }
            }

            private static bool IsClientGone(Exception e)
            {
                return e is IOException || e is ObjectDisposedException || e is HttpListenerException ||
                       e is OperationCanceledException;
            }

            private void FillEnvironment(HttpListenerRequest request)
            {
                // RawUrl is the request target as sent: the path unescaped, the query as it came.
                string raw = request.RawUrl ?? "/";
                if (raw.StartsWith("http://", StringComparison.OrdinalIgnoreCase) || raw.StartsWith("https://", StringComparison.OrdinalIgnoreCase))
                    raw = new Uri(raw).PathAndQuery;
                int q = raw.IndexOf('?');
                string path = q < 0 ? raw : raw.Substring(0, q);
                string query = q < 0 ? "" : raw.Substring(q + 1);

                var headers = new Dictionary<string, string[]>(StringComparer.OrdinalIgnoreCase);
                foreach (string name in request.Headers.AllKeys)
                    headers[name] = request.Headers.GetValues(name) ?? new string[0];

                _env["owin.Version"] = "1.0";
                _env["owin.RequestMethod"] = request.HttpMethod;
                _env["owin.RequestScheme"] = request.IsSecureConnection ? "https" : "http";
                _env["owin.RequestPathBase"] = "";
                _env["owin.RequestPath"] = Uri.UnescapeDataString(path);
                _env["owin.RequestQueryString"] = query;
                _env["owin.RequestProtocol"] = "HTTP/" + request.ProtocolVersion.ToString(2);
                _env["owin.RequestHeaders"] = headers;
                _env["owin.RequestBody"] = request.HasEntityBody ? request.InputStream : Stream.Null;
                _env["owin.CallCancelled"] = _cancelled.Token;
                _env["owin.ResponseStatusCode"] = 200;
                _env["owin.ResponseHeaders"] = _responseHeaders;
                _env["owin.ResponseBody"] = new ResponseBody(this);
                _env["server.RemoteIpAddress"] = request.RemoteEndPoint.Address.ToString();
                _env["server.RemotePort"] = request.RemoteEndPoint.Port.ToString();
                _env["server.LocalIpAddress"] = request.LocalEndPoint.Address.ToString();
                _env["server.LocalPort"] = request.LocalEndPoint.Port.ToString();
                _env["server.IsLocal"] = request.IsLocal;
                _env["server.User"] = null;
                _env["server.OnSendingHeaders"] = new Action<Action<object>, object>((callback, state) =>
                {
                    lock (_startLock)
                    {
                        if (_started) throw new InvalidOperationException("the response has already started");
                        _onSendingHeaders.Add(new KeyValuePair<Action<object>, object>(callback, state));
                    }
                });
                _env["host.TraceOutput"] = _server._trace;
                if (_server._advertiseWebSockets)
                    _env["server.Capabilities"] = new Dictionary<string, object> { { "websocket.Version", "1.0" } };
            }

            // Sends the status line and headers (once): the OnSendingHeaders callbacks first, last
            // registered first, as Katana does.
            public void Start()
            {
                List<KeyValuePair<Action<object>, object>> callbacks;
                lock (_startLock)
                {
                    if (_started) return;
                    _started = true;
                    callbacks = _onSendingHeaders.ToList();
                }
                callbacks.Reverse();
                foreach (var c in callbacks)
                    c.Key(c.Value);

                var response = _context.Response;
                object status;
                response.StatusCode = _env.TryGetValue("owin.ResponseStatusCode", out status) && status is int ? (int)status : 200;
                object reason;
                if (_env.TryGetValue("owin.ResponseReasonPhrase", out reason) && reason is string && ((string)reason).Length > 0)
                    response.StatusDescription = (string)reason;
                foreach (var header in _responseHeaders)
                {
                    string name = header.Key;
                    string[] values = header.Value ?? new string[0];
                    if (values.Length == 0) continue;
                    string joined = string.Join(", ", values);
                    switch (name.ToLowerInvariant())
                    {
                        case "content-length": response.ContentLength64 = long.Parse(joined); break;
                        case "content-type": response.ContentType = joined; break;
                        case "transfer-encoding": if (joined.IndexOf("chunked", StringComparison.OrdinalIgnoreCase) >= 0) response.SendChunked = true; break;
                        case "connection": if (joined.Equals("close", StringComparison.OrdinalIgnoreCase)) response.KeepAlive = false; break;
                        case "keep-alive": break;
                        default:
                            foreach (string value in values)
                            {
                                try { response.Headers.Add(name, value); }
                                catch (Exception) { response.AppendHeader(name, value); }
                            }
                            break;
                    }
                }
            }

            public void Abort()
            {
                try { _cancelled.Cancel(); } catch (ObjectDisposedException) { }
                try { _context.Response.Abort(); } catch (Exception) { }
            }

            public Stream Output { get { return _context.Response.OutputStream; } }
        }

        // owin.ResponseBody: starts the response on first use; a failed write means the client is
        // gone, so owin.CallCancelled is cancelled (SignalR ends the transport on it).
        private sealed class ResponseBody : Stream
        {
            private readonly Exchange _exchange;

            public ResponseBody(Exchange exchange) { _exchange = exchange; }

            public override bool CanRead { get { return false; } }
            public override bool CanSeek { get { return false; } }
            public override bool CanWrite { get { return true; } }
            public override long Length { get { throw new NotSupportedException(); } }
            public override long Position { get { throw new NotSupportedException(); } set { throw new NotSupportedException(); } }
            public override int Read(byte[] buffer, int offset, int count) { throw new NotSupportedException(); }
            public override long Seek(long offset, SeekOrigin origin) { throw new NotSupportedException(); }
            public override void SetLength(long value) { throw new NotSupportedException(); }

            public override void Write(byte[] buffer, int offset, int count)
            {
                try
                {
                    _exchange.Start();
                    if (count > 0) _exchange.Output.Write(buffer, offset, count);
                }
                catch (Exception)
                {
                    _exchange.Abort();
                    throw;
                }
            }

            public override Task WriteAsync(byte[] buffer, int offset, int count, CancellationToken cancellationToken)
            {
                try
                {
                    Write(buffer, offset, count);
                    return Task.FromResult(0);
                }
                catch (Exception e)
                {
                    var failed = new TaskCompletionSource<int>();
                    failed.SetException(e);
                    return failed.Task;
                }
            }

            public override void Flush()
            {
                try
                {
                    _exchange.Start();
                    _exchange.Output.Flush();
                }
                catch (Exception)
                {
                    _exchange.Abort();
                    throw;
                }
            }

            public override Task FlushAsync(CancellationToken cancellationToken)
            {
                try
                {
                    Flush();
                    return Task.FromResult(0);
                }
                catch (Exception e)
                {
                    var failed = new TaskCompletionSource<int>();
                    failed.SetException(e);
                    return failed.Task;
                }
            }
        }
    }
}
