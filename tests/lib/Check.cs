// Assertions for the .NET scenario runners (tests/interop/dotnet and tests/legacy/dotnet link this
// one file, <Compile Include="../../lib/Check.cs" />): each failure says what was expected and what
// came, with long values cut short so that a 1 MB payload never floods the output. A project adds
// its own formats for Show through the partial method ShowSpecial (the legacy runner: JTokens).
using System.Collections;
using System.Text.RegularExpressions;

namespace SignalrRelay.Testing;

public sealed class CheckFailed : Exception
{
    public CheckFailed(string message) : base(message) { }
}

public static partial class Check
{
    public static void Equal<T>(T expected, T actual, string what)
    {
        if (!EqualityComparer<T>.Default.Equals(expected, actual))
            throw new CheckFailed($"{what}: expected {Show(expected)}, got {Show(actual)}");
    }

    public static void SequenceEqual<T>(IEnumerable<T>? expected, IEnumerable<T>? actual, string what)
    {
        if (expected is null || actual is null)
        {
            if (!ReferenceEquals(expected, actual))
                throw new CheckFailed($"{what}: expected {Show(expected)}, got {Show(actual)}");
            return;
        }
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

    // Nothing in `errors` (errors a client reported that the scenario did not expect).
    public static void Empty<T>(IEnumerable<T> errors, string what)
    {
        var list = errors.ToList();
        if (list.Count > 0)
            throw new CheckFailed($"{what}: expected none, got {Show(list)}");
    }

    // Runs action and returns the exception it threw, which must be exactly TException (not a
    // subclass: a test that expects HubException must not pass on something more specific).
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

    // Runs action and returns the exception it threw, of whatever type.
    public static async Task<Exception> ThrowsAny(Func<Task> action, string what)
    {
        try
        {
            await action();
        }
        catch (Exception e)
        {
            return e;
        }
        throw new CheckFailed($"{what}: expected an exception, nothing was thrown");
    }

    // An exception as one line: its type and message, and its inner exception's.
    public static string Describe(Exception e)
    {
        if (e is AggregateException { InnerExceptions.Count: 1 } a)
            e = a.InnerExceptions[0];
        string text = $"{e.GetType().Name}: {Cut(e.Message)}";
        if (e is not CheckFailed && e.InnerException is { } inner)
            text += $" <- {inner.GetType().Name}: {Cut(inner.Message)}";
        return text;
    }

    static partial void ShowSpecial(object value, ref string? text);

    public static string Show(object? value)
    {
        if (value is null)
            return "null";
        string? special = null;
        ShowSpecial(value, ref special);
        if (special is not null)
            return Cut(special);
        return value switch
        {
            string s => "\"" + Cut(s) + "\"",
            Exception e => Describe(e),
            IEnumerable items => "[" + string.Join(", ", items.Cast<object?>().Take(20).Select(Show)) + "]",
            _ => Cut(value.ToString() ?? ""),
        };
    }

    public static string Cut(string s) => s.Length <= 200 ? s : s.Substring(0, 200) + $"... ({s.Length} chars)";
}
