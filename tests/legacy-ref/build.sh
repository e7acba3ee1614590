#!/usr/bin/env bash
# Builds the legacy reference server into tests/legacy-ref/bin/ (idempotent: does nothing when
# bin/ is newer than every source). Needs Mono's C# compiler (Debian: mono-devel, installed here
# with apt-get when missing) and the .NET SDK (only to fetch the NuGet packages).
#   1. `dotnet restore restore/restore.csproj`: Microsoft.AspNet.SignalR.Core 2.4.1,
#      Microsoft.Owin 4.2.2, Newtonsoft.Json 13.0.3 into the NuGet cache (PackageDownload)
#   2. their unmodified net45 assemblies copied to bin/
#   3. mcs: the stand-ins shim/Owin.cs and shim/Microsoft.Owin.Security.cs (those packages are not
#      served here), then src/*.cs -> bin/LegacyRef.exe, app.config -> bin/LegacyRef.exe.config
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="$here/bin"
export DOTNET_NOLOGO=1 DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1

if ! command -v mcs >/dev/null || ! command -v mono >/dev/null; then
    echo "legacy-ref: installing mono-devel (Debian) for mcs and mono" >&2
    sudo_cmd=()
    [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq mono-devel >/dev/null
fi

up_to_date() {
    [ -f "$bin/LegacyRef.exe" ] || return 1
    local newer
    newer="$(find "$here/src" "$here/shim" "$here/app.config" "$here/build.sh" "$here/restore/restore.csproj" \
                  -newer "$bin/LegacyRef.exe" -print -quit)"
    [ -z "$newer" ]
}
if up_to_date; then
    exit 0
fi

packages="${NUGET_PACKAGES:-$HOME/.nuget/packages}"
need=("$packages/microsoft.aspnet.signalr.core/2.4.1/lib/net45/Microsoft.AspNet.SignalR.Core.dll"
      "$packages/microsoft.owin/4.2.2/lib/net45/Microsoft.Owin.dll"
      "$packages/newtonsoft.json/13.0.3/lib/net45/Newtonsoft.Json.dll")
missing=0
for f in "${need[@]}"; do [ -f "$f" ] || missing=1; done
if [ "$missing" = 1 ]; then
    echo "legacy-ref: dotnet restore (NuGet packages of the legacy server)" >&2
    out="$(cd "$here/restore" && timeout 300 dotnet restore --nologo 2>&1)" || { printf '%s\n' "$out" >&2; exit 1; }
    rm -rf "$here/restore/obj"
fi

mkdir -p "$bin"
cp -f "${need[@]}" "$bin/"
cd "$bin"
mcs_quiet() { mcs -nologo -debug- -optimize+ "$@"; }
mcs_quiet -target:library -out:Owin.dll "$here/shim/Owin.cs"
mcs_quiet -target:library -out:Microsoft.Owin.Security.dll -r:Owin.dll "$here/shim/Microsoft.Owin.Security.cs"
mcs_quiet -target:exe -out:LegacyRef.exe.tmp -langversion:7.2 \
    -r:System.dll -r:System.Core.dll -r:Microsoft.CSharp.dll \
    -r:Microsoft.AspNet.SignalR.Core.dll -r:Newtonsoft.Json.dll \
    "$here"/src/*.cs
cp -f "$here/app.config" LegacyRef.exe.config
mv -f LegacyRef.exe.tmp LegacyRef.exe
echo "legacy-ref: built $bin/LegacyRef.exe" >&2
