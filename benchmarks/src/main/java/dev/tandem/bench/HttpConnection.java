package dev.tandem.bench;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * A minimal HTTP/1.1 client connection for the load generator: one request at a time over a kept-
 * alive socket, the response body handed over line by line as it arrives (for SSE), with the
 * arrival time of the read that delivered each line. Much lighter than a general HTTP client, so
 * that on a small machine the generator disturbs what it measures as little as possible.
 *
 * <p>Not thread-safe: one user at a time (the generator pools connections).
 */
final class HttpConnection implements AutoCloseable {
  /** Receives each body line (without its newline) and the time its bytes were read. */
  interface LineHandler {
    /** Returns false to stop reading (the connection is then closed). */
    boolean line(String line, long arrivalNanos) throws IOException;
  }

  /** Status and, for non-200 answers, the body. */
  record Status(int code, String errorBody, boolean reusable) {}

  private final URI base;
  private final String authorization; // the header line, or ""
  private final Socket socket;
  private final InputStream in;
  private final OutputStream out;

  HttpConnection(URI base) throws IOException {
    this(base, null);
  }

  /** A connection that sends {@code apiKey} (may be null) as a Bearer token with each request. */
  HttpConnection(URI base, String apiKey) throws IOException {
    this.base = base;
    this.authorization = apiKey == null || apiKey.isEmpty() ? "" : "Authorization: Bearer " + apiKey + "\r\n";
    this.socket = new Socket(base.getHost(), base.getPort() < 0 ? 80 : base.getPort());
    socket.setTcpNoDelay(true);
    this.in = new BufferedInputStream(socket.getInputStream(), 64 << 10);
    this.out = socket.getOutputStream();
  }

  Status post(String path, byte[] json, LineHandler handler) throws IOException {
    String head =
        "POST " + path + " HTTP/1.1\r\nHost: " + base.getHost() + "\r\nContent-Type: application/json\r\n"
            + "Accept: text/event-stream\r\n" + authorization + "Content-Length: " + json.length + "\r\n\r\n";
    out.write(head.getBytes(StandardCharsets.US_ASCII));
    out.write(json);
    out.flush();

    String statusLine = readLine();
    int code = Integer.parseInt(statusLine.split(" ", 3)[1]);
    boolean chunked = false;
    long length = -1;
    boolean close = false;
    for (String h = readLine(); !h.isEmpty(); h = readLine()) {
      String lower = h.toLowerCase(Locale.ROOT);
      if (lower.startsWith("transfer-encoding:") && lower.contains("chunked")) {
        chunked = true;
      } else if (lower.startsWith("content-length:")) {
        length = Long.parseLong(h.substring(15).trim());
      } else if (lower.startsWith("connection:") && lower.contains("close")) {
        close = true;
      }
    }
    LineSplitter lines = new LineSplitter(code == 200 ? handler : null);
    boolean complete = true;
    if (chunked) {
      while (true) {
        int size = Integer.parseInt(readLine().trim().split(";")[0], 16);
        if (size == 0) {
          readLine();
          break;
        }
        byte[] data = in.readNBytes(size);
        if (data.length < size) {
          throw new EOFException("connection closed inside a chunk");
        }
        readLine();
        if (!lines.feed(data, System.nanoTime())) {
          complete = false;
          break;
        }
      }
    } else if (length >= 0) {
      byte[] data = in.readNBytes((int) length);
      lines.feed(data, System.nanoTime());
    } else {
      lines.feed(in.readAllBytes(), System.nanoTime());
      close = true;
    }
    lines.finish();
    return new Status(code, code == 200 ? null : lines.text(), complete && !close);
  }

  private String readLine() throws IOException {
    ByteArrayOutputStream line = new ByteArrayOutputStream(64);
    int c;
    while ((c = in.read()) != -1) {
      if (c == '\n') {
        byte[] b = line.toByteArray();
        int n = b.length > 0 && b[b.length - 1] == '\r' ? b.length - 1 : b.length;
        return new String(b, 0, n, StandardCharsets.ISO_8859_1);
      }
      line.write(c);
    }
    throw new EOFException("connection closed");
  }

  @Override
  public void close() {
    try {
      socket.close();
    } catch (IOException ignored) {
      // closing anyway
    }
  }

  /** Splits body bytes into UTF-8 lines; collects the whole text when there is no handler. */
  private static final class LineSplitter {
    private final LineHandler handler;
    private final ByteArrayOutputStream pending = new ByteArrayOutputStream();
    private final StringBuilder all = new StringBuilder();

    LineSplitter(LineHandler handler) {
      this.handler = handler;
    }

    boolean feed(byte[] data, long nanos) throws IOException {
      if (handler == null) {
        all.append(new String(data, StandardCharsets.UTF_8));
        return true;
      }
      int start = 0;
      for (int i = 0; i < data.length; i++) {
        if (data[i] == '\n') {
          pending.write(data, start, i - start);
          String line = pending.toString(StandardCharsets.UTF_8);
          pending.reset();
          start = i + 1;
          if (!handler.line(line, nanos)) {
            return false;
          }
        }
      }
      pending.write(data, start, data.length - start);
      return true;
    }

    void finish() throws IOException {
      if (handler != null && pending.size() > 0) {
        handler.line(pending.toString(StandardCharsets.UTF_8), System.nanoTime());
      }
    }

    String text() {
      return all.toString();
    }
  }
}
