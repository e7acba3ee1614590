// Stand-in for the `Owin` 1.0 package (not served by the package feed here): the one interface
// it defines, with the same namespace, name and members. Microsoft.Owin and
// Microsoft.AspNet.SignalR.Core reference it as "Owin, Version=1.0.0.0,
// PublicKeyToken=f0ebd12fd5e55cc5"; this copy is unsigned, which Mono's loader accepts at run
// time (the C# compiler does not, so the host never names IAppBuilder in code: see src/Host.cs).
using System;
using System.Collections.Generic;
using System.Reflection;

[assembly: AssemblyVersion("1.0.0.0")]
[assembly: AssemblyTitle("Owin (test stand-in for the OWIN 1.0 IAppBuilder interface)")]

namespace Owin
{
    public interface IAppBuilder
    {
        IDictionary<string, object> Properties { get; }
        IAppBuilder Use(object middleware, params object[] args);
        object Build(Type returnType);
        IAppBuilder New();
    }
}
