package dev.tandem.frontend.http;

import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpRequest;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.List;

/**
 * The API keys a client must present as {@code Authorization: Bearer <key>}; none configured: no
 * check. Every key is compared in constant time, and every configured key is compared on every
 * request, so that timing tells nothing about which key or how much of it matched. Immutable.
 */
public final class ApiKeys {
  private static final ApiKeys NONE = new ApiKeys(List.of());
  private final List<byte[]> keys;

  private ApiKeys(List<byte[]> keys) {
    this.keys = keys;
  }

  public static ApiKeys none() {
    return NONE;
  }

  /** These keys (blank ones are ignored). */
  public static ApiKeys of(List<String> keys) {
    List<byte[]> out = new ArrayList<>();
    for (String k : keys) {
      if (k != null && !k.isBlank()) {
        out.add(k.strip().getBytes(StandardCharsets.UTF_8));
      }
    }
    return new ApiKeys(List.copyOf(out));
  }

  /**
   * One key a line from {@code file} ({@code #} comments and blank lines skipped).
   *
   * @throws IllegalArgumentException naming the file when it is missing, unreadable or holds no key
   */
  public static ApiKeys fromFile(Path file) {
    List<String> lines;
    try {
      lines = Files.readAllLines(file);
    } catch (NoSuchFileException e) {
      throw new IllegalArgumentException("--api-key-file " + file + ": no such file");
    } catch (IOException e) {
      throw new IllegalArgumentException("--api-key-file " + file + ": cannot read: " + e.getMessage());
    }
    ApiKeys keys = of(lines.stream().filter(l -> !l.strip().startsWith("#")).toList());
    if (!keys.enabled()) {
      throw new IllegalArgumentException("--api-key-file " + file + ": holds no key (one a line)");
    }
    return keys;
  }

  /** These keys and {@code other}'s. */
  public ApiKeys and(ApiKeys other) {
    List<byte[]> all = new ArrayList<>(keys);
    all.addAll(other.keys);
    return new ApiKeys(List.copyOf(all));
  }

  public boolean enabled() {
    return !keys.isEmpty();
  }

  public int count() {
    return keys.size();
  }

  /** Whether {@code request} carries one of the keys (always true with none configured). */
  public boolean admits(HttpRequest request) {
    if (keys.isEmpty()) {
      return true;
    }
    String header = request.headers().get(HttpHeaderNames.AUTHORIZATION);
    if (header == null || !header.regionMatches(true, 0, "Bearer ", 0, 7)) {
      return false;
    }
    byte[] presented = header.substring(7).strip().getBytes(StandardCharsets.UTF_8);
    boolean match = false;
    for (byte[] key : keys) {
      match |= MessageDigest.isEqual(key, presented); // constant time for equal lengths; all keys tried
    }
    return match;
  }
}
