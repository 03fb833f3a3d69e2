package dev.tandem.common;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** A worker id is its value: equal values are the same worker, as map keys too. */
class WorkerIdTest {
  @Test
  void equalValuesAreTheSameWorker() {
    WorkerId a = new WorkerId("decode-" + 7);
    WorkerId b = new WorkerId(new String("decode-7"));
    assertEquals(a, b);
    assertEquals(a.hashCode(), b.hashCode());
    assertNotEquals(a, new WorkerId("decode-8"));
    assertNotEquals(a, "decode-7");
    assertNotEquals(a, null);
    Map<WorkerId, Integer> map = new HashMap<>();
    map.put(a, 1);
    assertEquals(1, map.get(b));
  }

  @Test
  void aBlankIdIsRefused() {
    assertThrows(IllegalArgumentException.class, () -> new WorkerId(" "));
    assertThrows(NullPointerException.class, () -> new WorkerId(null));
  }
}
