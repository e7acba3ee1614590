// Stand-in for the parts of `Microsoft.Owin.Security` (not served by the package feed here) that
// Microsoft.AspNet.SignalR.Core 2.4.1 uses: MapSignalR asks the app builder for a data protection
// provider (AppBuilderExtensions.GetDataProtectionProvider) and, on Mono, falls back to its own
// DefaultProtectedData when there is none. So GetDataProtectionProvider answers what the host put
// in the "security.DataProtectionProvider" property (nothing, by default), as the real one does,
// and DpapiDataProtectionProvider exists only so that the type resolves: SignalR never creates
// it on Mono. Version 2.1.0.0 is the one SignalR.Core references.
using System;
using System.Collections.Generic;
using System.Reflection;
using Owin;

[assembly: AssemblyVersion("2.1.0.0")]
[assembly: AssemblyTitle("Microsoft.Owin.Security (test stand-in: data protection types only)")]

namespace Microsoft.Owin.Security.DataProtection
{
    public interface IDataProtector
    {
        byte[] Protect(byte[] userData);
        byte[] Unprotect(byte[] protectedData);
    }

    public interface IDataProtectionProvider
    {
        IDataProtector Create(params string[] purposes);
    }

    public static class AppBuilderExtensions
    {
        private const string Key = "security.DataProtectionProvider";

        public static void SetDataProtectionProvider(this IAppBuilder app, IDataProtectionProvider provider)
        {
            if (app == null) throw new ArgumentNullException("app");
            app.Properties[Key] = provider;
        }

        public static IDataProtectionProvider GetDataProtectionProvider(this IAppBuilder app)
        {
            if (app == null) throw new ArgumentNullException("app");
            object value;
            return app.Properties.TryGetValue(Key, out value) ? value as IDataProtectionProvider : null;
        }
    }

    public class DpapiDataProtectionProvider : IDataProtectionProvider
    {
        public DpapiDataProtectionProvider() { }
        public DpapiDataProtectionProvider(string appName) { }

        public IDataProtector Create(params string[] purposes)
        {
            throw new PlatformNotSupportedException("DPAPI data protection is not available in this test stand-in");
        }
    }
}
