// The legacy runner's additions to the shared Check (tests/lib/Check.cs): JSON comparison and
// JTokens shown as compact JSON.
using Newtonsoft.Json;
using Newtonsoft.Json.Linq;

namespace SignalrRelay.Testing;

public static partial class Check
{
    public static void SameJson(JToken? expected, JToken? actual, string what)
    {
        if (!JToken.DeepEquals(expected, actual))
            throw new CheckFailed($"{what}: expected {Show(expected)}, got {Show(actual)}");
    }

    static partial void ShowSpecial(object value, ref string? text)
    {
        if (value is JToken t)
            text = t.ToString(Formatting.None);
    }
}
