/* The code interpreter's java driver: cells run by the JShell API (jdk.jshell)
 * in this JVM, so variables, methods, classes and imports persist across
 * cells. Contract (as the node driver's, core/codeinterp/drivers.c): cells
 * come on fd 3, each a header line "<seq> <silent 0|1> <bytes>" and then the
 * cell's UTF-8 bytes; events go to fd 4 as JSON lines: ready, display {data,
 * main}, error {name, value, traceback}, stream {err, text} (every write to
 * System.out / System.err), done {seq}; fds 1 and 2 (read by the server)
 * get only what bypasses System.out (a child process's output). SIGINT stops
 * the running cell (JShell.stop) and the state lives on.
 *
 * Written here because Debian and npm have no Java Jupyter kernel (IJava is
 * a GitHub release); the JDK's JShell API does the compiling and the state.
 * Built at build time with javac and carried in the server's binary (see
 * core/codeinterp/CMakeLists.txt). SPDX-License-Identifier: Apache-2.0 */
package asb;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import jdk.jshell.EvalException;
import jdk.jshell.JShell;
import jdk.jshell.JShellException;
import jdk.jshell.Snippet;
import jdk.jshell.SnippetEvent;
import jdk.jshell.SourceCodeAnalysis;
import jdk.jshell.UnresolvedReferenceException;
import jdk.jshell.execution.LocalExecutionControl;
import jdk.jshell.spi.ExecutionControl;
import jdk.jshell.spi.ExecutionControlProvider;
import jdk.jshell.spi.ExecutionEnv;

public final class JavaDriver {
  private static OutputStream events;

  /* ---- the value of the last snippet ---------------------------------------- */

  /* JShell hands back values as its own display strings (strings quoted and
   * escaped); a result's text/plain is the value's toString, as IJava's. So
   * snippets run in this JVM (the local execution engine) through
   * callCurrent, which keeps the value each snippet's do_it$ returns. */
  private static volatile Method current;
  private static volatile Object lastValue;
  private static final Method CALL;

  static {
    try {
      CALL = JavaDriver.class.getMethod("callCurrent");
    } catch (NoSuchMethodException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  public static Object callCurrent() throws Throwable {
    try {
      Object v = current.invoke(null);
      lastValue = v;
      return v;
    } catch (InvocationTargetException e) {
      throw e.getCause(); /* the snippet's own exception, as if called directly */
    }
  }

  static final class Exec extends LocalExecutionControl {
    @Override
    protected String invoke(Method doit) throws Exception {
      current = doit;
      lastValue = null;
      return super.invoke(CALL);
    }
  }

  static final class Provider implements ExecutionControlProvider {
    @Override
    public String name() {
      return "asb-local";
    }

    @Override
    public ExecutionControl generate(ExecutionEnv env, Map<String, String> parameters) {
      return new Exec();
    }
  }

  /* ---- events ------------------------------------------------------------------ */

  private static void json(StringBuilder b, String s) {
    b.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"': b.append("\\\""); break;
        case '\\': b.append("\\\\"); break;
        case '\n': b.append("\\n"); break;
        case '\r': b.append("\\r"); break;
        case '\t': b.append("\\t"); break;
        default:
          if (c < 0x20 || (c >= 0xd800 && c <= 0xdfff && !pairedSurrogate(s, i)))
            b.append(String.format("\\u%04x", (int) (c < 0x20 ? c : 0xfffd)));
          else
            b.append(c);
      }
    }
    b.append('"');
  }

  private static boolean pairedSurrogate(String s, int i) {
    char c = s.charAt(i);
    if (Character.isHighSurrogate(c))
      return i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1));
    return i > 0 && Character.isHighSurrogate(s.charAt(i - 1));
  }

  /* Not under sendRaw's lock: a cell's thread holds its PrintStream's lock
   * while it writes (Events.write -> sendRaw), so flushing under sendRaw's
   * lock could deadlock. */
  private static void send(String line) {
    System.out.flush(); /* what the cell printed comes before */
    System.err.flush();
    sendRaw(line);
  }

  private static synchronized void sendRaw(String line) {
    try {
      events.write((line + "\n").getBytes(StandardCharsets.UTF_8));
    } catch (IOException e) {
      Runtime.getRuntime().halt(0); /* the server is gone */
    }
  }

  /* System.out and System.err: every write is one stream event on fd 4 (one
   * stdout/stderr message), in order with the other events, as IJava sends
   * every write of its streams as a message of its own. With a PrintStream
   * subclass (below), println(x) is print(x) and then newLine(): two writes,
   * so println("Hello, World!") is ["Hello, World!", "\n"], IJava's split.
   * A UTF-8 sequence cut by a raw write(byte) waits for its end; a huge
   * write goes out in pieces of at most 64 KiB. */
  static final class Events extends OutputStream {
    private static final int MAX = 1 << 16;
    private final boolean err;
    private final byte[] carry = new byte[4];
    private int ncarry;

    Events(boolean err) {
      this.err = err;
    }

    @Override
    public void write(int b) {
      write(new byte[] {(byte) b}, 0, 1);
    }

    @Override
    public synchronized void write(byte[] b, int off, int len) {
      while (len > 0) {
        int n = Math.min(len, MAX);
        byte[] v = new byte[ncarry + n];
        System.arraycopy(carry, 0, v, 0, ncarry);
        System.arraycopy(b, off, v, ncarry, n);
        off += n;
        len -= n;
        int keep = utf8Tail(v);
        ncarry = keep;
        System.arraycopy(v, v.length - keep, carry, 0, keep);
        if (v.length - keep == 0) continue;
        StringBuilder s = new StringBuilder(v.length + 32);
        s.append("{\"t\":\"stream\",\"err\":").append(err).append(",\"text\":");
        json(s, new String(v, 0, v.length - keep, StandardCharsets.UTF_8));
        s.append('}');
        sendRaw(s.toString());
      }
    }

    /* bytes at the end of v that begin an incomplete UTF-8 sequence */
    private static int utf8Tail(byte[] v) {
      for (int back = 1; back <= 3 && back <= v.length; back++) {
        int c = v[v.length - back] & 0xff;
        if ((c & 0xc0) == 0x80) continue;
        int need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
        return need > back ? back : 0;
      }
      return 0;
    }
  }

  static String render(Object v) {
    if (v instanceof Object[]) return Arrays.deepToString((Object[]) v);
    if (v instanceof int[]) return Arrays.toString((int[]) v);
    if (v instanceof long[]) return Arrays.toString((long[]) v);
    if (v instanceof double[]) return Arrays.toString((double[]) v);
    if (v instanceof float[]) return Arrays.toString((float[]) v);
    if (v instanceof short[]) return Arrays.toString((short[]) v);
    if (v instanceof byte[]) return Arrays.toString((byte[]) v);
    if (v instanceof char[]) return Arrays.toString((char[]) v);
    if (v instanceof boolean[]) return Arrays.toString((boolean[]) v);
    return String.valueOf(v);
  }

  private static void sendDisplay(Object v, boolean main) {
    StringBuilder b = new StringBuilder("{\"t\":\"display\",\"main\":");
    b.append(main).append(",\"data\":{\"text/plain\":");
    json(b, render(v));
    send(b.append("}}").toString());
  }

  /* display(value) in a cell: a result that is not the cell's main one. */
  public static void display(Object v) {
    sendDisplay(v, false);
  }

  private static void sendError(String name, String value, String traceback) {
    StringBuilder b = new StringBuilder("{\"t\":\"error\",\"name\":");
    json(b, name);
    b.append(",\"value\":");
    json(b, value == null ? "" : value);
    b.append(",\"traceback\":");
    json(b, traceback);
    send(b.append('}').toString());
  }

  /* ---- errors ------------------------------------------------------------------ */

  /* "REPL.$JShell$12$Point" → "Point", "REPL.$JShell$11" → "" (as jshell
   * prints its frames) */
  private static String replName(String cls) {
    if (!cls.startsWith("REPL.$JShell$")) return cls;
    String rest = cls.substring("REPL.$JShell$".length());
    int d = rest.indexOf('$');
    return d < 0 ? "" : rest.substring(d + 1);
  }

  /* The frames of the cell's code: up to the last one in a snippet class
   * (below it: reflection and this driver). */
  private static void frames(StringBuilder b, StackTraceElement[] st) {
    int last = -1;
    for (int i = 0; i < st.length; i++)
      if (st[i].getClassName().startsWith("REPL.")) last = i;
    int end = last < 0 ? st.length : last + 1;
    for (int i = 0; i < end; i++) {
      StackTraceElement f = st[i];
      String cls = replName(f.getClassName());
      String m = f.getMethodName().equals("do_it$") ? "" : f.getMethodName();
      b.append("\n\tat ").append(cls).append(cls.isEmpty() || m.isEmpty() ? "" : ".").append(m)
          .append(" (").append(f.getFileName() == null ? "Unknown Source" : f.getFileName());
      if (f.getLineNumber() >= 0) b.append(':').append(f.getLineNumber());
      b.append(')');
    }
  }

  private static String exName(JShellException e) {
    if (e instanceof EvalException) return ((EvalException) e).getExceptionClassName();
    return e.getClass().getName().replace("jdk.jshell.", "");
  }

  private static void reportException(JShellException e) {
    String name = exName(e), msg = e.getMessage();
    StringBuilder tb = new StringBuilder(name);
    if (msg != null) tb.append(": ").append(msg);
    frames(tb, e.getStackTrace());
    for (Throwable c = e.getCause(); c != null; c = c.getCause()) {
      String cn = c instanceof EvalException ? ((EvalException) c).getExceptionClassName()
                                             : c.getClass().getName();
      tb.append("\nCaused by: ").append(cn);
      if (c.getMessage() != null) tb.append(": ").append(c.getMessage());
      frames(tb, c.getStackTrace());
    }
    if (e instanceof UnresolvedReferenceException)
      msg = "attempt to use " + ((UnresolvedReferenceException) e).getSnippet().source().trim()
          + ", which has unresolved references";
    sendError(name, msg, tb.toString());
  }

  /* A snippet javac rejected: its diagnostics, each with its line and a caret. */
  private static void reportRejected(JShell sh, Snippet s) {
    StringBuilder value = new StringBuilder(), tb = new StringBuilder();
    String src = s.source();
    sh.diagnostics(s).forEach(d -> {
      /* less the "location: class " of JShell's nameless wrapper class */
      String m = d.getMessage(Locale.ROOT).replaceAll("\n\\s*location: class\\s*(?=\n|$)", "");
      if (value.length() > 0) value.append('\n');
      value.append(m);
      if (tb.length() > 0) tb.append('\n');
      tb.append(d.isError() ? "error: " : "warning: ").append(m);
      long pos = d.getPosition();
      if (pos >= 0 && pos <= src.length()) {
        int ls = src.lastIndexOf('\n', (int) Math.max(0, pos - 1)) + 1;
        if (pos > 0 && src.charAt((int) pos - 1) == '\n') ls = (int) pos;
        int le = src.indexOf('\n', (int) pos);
        if (le < 0) le = src.length();
        tb.append('\n').append(src, ls, le).append('\n');
        for (int i = ls; i < pos; i++) tb.append(src.charAt(i) == '\t' ? '\t' : ' ');
        tb.append('^');
      }
    });
    if (value.length() == 0) value.append("the snippet was rejected: ").append(src.trim());
    sendError("CompilationException", value.toString(), tb.toString());
  }

  /* ---- cells ------------------------------------------------------------------- */

  private static volatile boolean stopped;

  private static boolean isExpression(Snippet s) {
    return s.kind() == Snippet.Kind.EXPRESSION
        || s.subKind() == Snippet.SubKind.TEMP_VAR_EXPRESSION_SUBKIND;
  }

  /* Run a cell: its snippets one by one (JShell evaluates one at a time),
   * stopping at the first that fails. The last snippet's value, if it is an
   * expression, is the main result. */
  private static void run(JShell sh, String code, boolean silent) {
    SourceCodeAnalysis sca = sh.sourceCodeAnalysis();
    String rest = code;
    Snippet last = null;
    Object value = null;
    stopped = false;
    while (!rest.isBlank()) {
      SourceCodeAnalysis.CompletionInfo ci = sca.analyzeCompletion(rest);
      String src;
      SourceCodeAnalysis.Completeness c = ci.completeness();
      if (c == SourceCodeAnalysis.Completeness.EMPTY) return;
      if (c == SourceCodeAnalysis.Completeness.DEFINITELY_INCOMPLETE
          || c == SourceCodeAnalysis.Completeness.CONSIDERED_INCOMPLETE) {
        src = rest; /* javac says what is missing */
        rest = "";
      } else {
        src = ci.source();
        rest = ci.remaining();
      }
      List<SnippetEvent> evs = sh.eval(src);
      last = null;
      for (SnippetEvent e : evs) {
        if (e.causeSnippet() != null) continue; /* a dependent snippet updated */
        if (e.status() == Snippet.Status.REJECTED) {
          if (!silent) reportRejected(sh, e.snippet());
          return;
        }
        if (e.exception() != null) {
          if (silent) return;
          if (stopped)
            sendError("ExecutionAborted", "Execution was interrupted", "");
          else
            reportException(e.exception());
          return;
        }
        last = e.snippet();
        value = lastValue;
      }
      if (stopped) {
        if (!silent) sendError("ExecutionAborted", "Execution was interrupted", "");
        return;
      }
    }
    if (!silent && last != null && isExpression(last)) sendDisplay(value, true);
  }

  /* SIGINT → r, through sun.misc.Signal (jdk.unsupported, in every JDK
   * since 9), reached by reflection: javac warns about the direct use at
   * every build and cannot be told not to. */
  private static void onSigint(Runnable r) throws ReflectiveOperationException {
    Class<?> sig = Class.forName("sun.misc.Signal");
    Class<?> handler = Class.forName("sun.misc.SignalHandler");
    Object h = Proxy.newProxyInstance(handler.getClassLoader(), new Class<?>[] {handler},
        (self, m, a) -> {
          switch (m.getName()) {
            case "handle": r.run(); return null;
            case "hashCode": return System.identityHashCode(self);
            case "equals": return self == a[0];
            default: return "asb-sigint";
          }
        });
    sig.getMethod("handle", sig, handler).invoke(null, sig.getConstructor(String.class)
        .newInstance("INT"), h);
  }

  private static String readLine(InputStream in) throws IOException {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    int c;
    while ((c = in.read()) >= 0 && c != '\n') b.write(c);
    if (c < 0 && b.size() == 0) return null;
    return b.toString(StandardCharsets.US_ASCII);
  }

  public static void main(String[] args) throws Exception {
    events = new FileOutputStream("/proc/self/fd/4");
    /* unbuffered, each write an event (Events); the PrintStream subclass
     * ({}) makes println two writes, as IJava's */
    PrintStream out = new PrintStream(new Events(false), true, StandardCharsets.UTF_8) {};
    PrintStream err = new PrintStream(new Events(true), true, StandardCharsets.UTF_8) {};
    System.setOut(out);
    System.setErr(err);
    InputStream cells = new BufferedInputStream(new FileInputStream("/proc/self/fd/3"));

    /* The environment as system properties, as E2B's java kernel sees its
     * variables (System.getProperty("NAME")); per-call env_vars are set
     * and restored as properties too. */
    for (Map.Entry<String, String> v : System.getenv().entrySet())
      if (System.getProperty(v.getKey()) == null) System.setProperty(v.getKey(), v.getValue());

    JShell sh = JShell.builder()
                    .executionEngine(new Provider(), null)
                    .in(InputStream.nullInputStream())
                    .out(out)
                    .err(err)
                    .build();
    /* this driver's jar, so that cells can call display() */
    String self = System.getProperty("java.class.path");
    if (self != null && !self.isEmpty()) sh.addToClasspath(self);
    onSigint(() -> {
      stopped = true;
      sh.stop();
    });
    /* jshell's default imports, and display(); also warms the compiler up so
     * the first cell is not the one that pays for it */
    run(sh,
        "import java.io.*;\nimport java.math.*;\nimport java.net.*;\nimport java.nio.file.*;\n"
            + "import java.util.*;\nimport java.util.concurrent.*;\nimport java.util.function.*;\n"
            + "import java.util.regex.*;\nimport java.util.stream.*;\n"
            + (self != null && !self.isEmpty() ? "void display(Object value) { asb.JavaDriver.display(value); }\n" : "")
            + "1 + 1\n",
        true);
    send("{\"t\":\"ready\"}");
    for (;;) {
      String head = readLine(cells);
      if (head == null) break;
      String[] f = head.trim().split(" ");
      if (f.length != 3) continue;
      int n = Integer.parseInt(f[2]);
      byte[] code = cells.readNBytes(n);
      if (code.length != n) break;
      try {
        run(sh, new String(code, StandardCharsets.UTF_8), f[1].equals("1"));
      } catch (RuntimeException | Error e) {
        sendError(e.getClass().getName(), String.valueOf(e.getMessage()), e.toString());
      }
      out.flush();
      err.flush();
      send("{\"t\":\"done\",\"seq\":" + f[0] + "}");
    }
    System.exit(0);
  }
}
