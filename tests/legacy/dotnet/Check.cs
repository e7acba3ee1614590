// Assertions for the scenarios: each failure says what was expected and what came, with long
// values cut short so that a 100 KB payload never floods the output.
using System.Collections;
using System.Text.RegularExpressions;
using Newtonsoft.Json;
using Newtonsoft.Json.Linq;

namespace SignalrRelay.LegacyDotnet;

public sealed class CheckFailed : Exception
{
    public CheckFailed(string message) : base(message) { }
}

public static class Check
{
    public static void Equal<T>(T expected, T actual, string what)
    {
        if (!EqualityComparer<T>.Default.Equals(expected, actual))
            throw new CheckFailed($"{what}: expected {Show(expected)}, got {Show(actual)}");
    }

    public static void SameJson(JToken? expected, JToken? actual, string what)
    {
        if (!JToken.DeepEquals(expected, actual))
            throw new CheckFailed($"{what}: expected {Show(expected)}, got {Show(actual)}");
    }

    public static void SequenceEqual<T>(IEnumerable<T> expected, IEnumerable<T> actual, string what)
    {
        if (!expected.SequenceEqual(actual))
            throw new CheckFailed($"{what}: expected {Show(expected)}, got {Show(actual)}");
    }

    public static void True(bool condition, string what)
    {
        if (!condition)
            throw new CheckFailed(what);
    }

    public static void Matches(string pattern, string? actual, string what)
    {
        if (actual is null || !Regex.IsMatch(actual, pattern))
            throw new CheckFailed($"{what}: {Show(actual)} does not match /{pattern}/");
    }

    // Runs action and returns the exception it threw, which must be exactly TException.
    public static async Task<TException> Throws<TException>(Func<Task> action, string what)
        where TException : Exception
    {
        try
        {
            await action();
        }
        catch (Exception e) when (e.GetType() == typeof(TException))
        {
            return (TException)e;
        }
        catch (Exception e)
        {
            throw new CheckFailed($"{what}: expected {typeof(TException).FullName}, got {Describe(e)}");
        }
        throw new CheckFailed($"{what}: expected {typeof(TException).FullName}, nothing was thrown");
    }

    public static string Describe(Exception e)
    {
        if (e is AggregateException { InnerExceptions.Count: 1 } a)
            e = a.InnerExceptions[0];
        string text = $"{e.GetType().Name}: {Cut(e.Message)}";
        if (e is not CheckFailed && e.InnerException is { } inner)
            text += $" <- {inner.GetType().Name}: {Cut(inner.Message)}";
        return text;
    }

    public static string Show(object? value) => value switch
    {
        null => "null",
        JToken t => Cut(t.ToString(Formatting.None)),
        string s => "\"" + Cut(s) + "\"",
        IEnumerable items => "[" + string.Join(", ", items.Cast<object?>().Take(20).Select(Show)) + "]",
        _ => Cut(value.ToString() ?? ""),
    };

    private static string Cut(string s) => s.Length <= 200 ? s : s.Substring(0, 200) + $"... ({s.Length} chars)";
}
