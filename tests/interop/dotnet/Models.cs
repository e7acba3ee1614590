// Shapes of the values the scenarios send and receive. WhoAmI/GetDisconnectInfo/GetStatus
// answers are dictionaries with lower-case keys on the server, so these properties are named
// exactly like the keys: the JSON protocol (camelCase) and MessagePack (names as written) both
// then map them without extra attributes.
#pragma warning disable IDE1006 // lower-case property names on purpose, see above

namespace SignalrRelay.InteropDotnet;

public sealed class CallerInfo
{
    public string? hub { get; set; }
    public string? connectionId { get; set; }
    public string? tag { get; set; }
    public string? authorization { get; set; }
    public string? accessToken { get; set; }
    public string? forwardedFor { get; set; }
    public string? user { get; set; }
    public string? transport { get; set; }
    public string? userAgent { get; set; }
}

public sealed class RequestDetails
{
    public string? cookie { get; set; }
    public string? remoteAddress { get; set; }
}

public sealed class DisconnectInfo
{
    public bool disconnected { get; set; }
    public string? hub { get; set; }
    public string? error { get; set; }
}

public sealed class StatusInfo
{
    public string? hub { get; set; }
    public string? connectionId { get; set; }
    public int connected { get; set; }
}

// A nested object for Echo; compared field by field.
public sealed class Nested
{
    public string Name { get; set; } = "";
    public int[] Values { get; set; } = Array.Empty<int>();
    public Dictionary<string, double> Scores { get; set; } = new();
    public Nested? Child { get; set; }

    public static bool Same(Nested? a, Nested? b)
    {
        if (a is null || b is null)
            return a is null && b is null;
        return a.Name == b.Name
            && a.Values.SequenceEqual(b.Values)
            && a.Scores.Count == b.Scores.Count
            && a.Scores.All(kv => b.Scores.TryGetValue(kv.Key, out var v) && v == kv.Value)
            && Same(a.Child, b.Child);
    }

    public override string ToString() =>
        $"Nested({Name}, [{string.Join(",", Values)}], {{{string.Join(",", Scores.Select(kv => kv.Key + ":" + kv.Value))}}}, {Child})";
}
