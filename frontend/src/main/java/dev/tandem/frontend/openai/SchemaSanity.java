package dev.tandem.frontend.openai;

import com.fasterxml.jackson.databind.JsonNode;
import dev.tandem.frontend.http.ApiException;
import java.util.Iterator;
import java.util.Map;
import java.util.Set;

/**
 * Checks that a tool's {@code parameters} is a well-formed JSON schema where it says anything a
 * reader relies on — {@code type} names, {@code properties}, {@code required}, {@code items},
 * {@code enum}, the combinators — without asking that the engine could constrain to it (that is
 * checked only when a call is forced). Stateless.
 */
final class SchemaSanity {
  private static final Set<String> TYPES = Set.of("object", "array", "string", "integer", "number", "boolean", "null");
  private static final int MAX_DEPTH = 64;

  private SchemaSanity() {}

  /** @throws ApiException naming {@code param} and the place in the schema */
  static void check(JsonNode schema, String param) {
    check(schema, param, "", 0);
  }

  private static void check(JsonNode s, String param, String at, int depth) {
    if (depth > MAX_DEPTH) {
      throw bad(param, at, "the schema is nested deeper than " + MAX_DEPTH + " levels");
    }
    if (s.isBoolean()) {
      return;
    }
    if (!s.isObject()) {
      throw bad(param, at, "a schema must be an object or a boolean");
    }
    JsonNode type = s.get("type");
    if (type != null) {
      if (type.isTextual() ? !TYPES.contains(type.asText()) : !type.isArray()) {
        throw bad(param, at + "/type", "'type' must be one of " + TYPES + " or a list of them");
      }
      for (JsonNode t : type.isArray() ? type : java.util.List.<JsonNode>of()) {
        if (!TYPES.contains(t.asText())) {
          throw bad(param, at + "/type", "unknown type '" + t.asText() + "'");
        }
      }
    }
    JsonNode props = s.get("properties");
    if (props != null) {
      if (!props.isObject()) {
        throw bad(param, at + "/properties", "'properties' must be an object of schemas");
      }
      for (Iterator<Map.Entry<String, JsonNode>> it = props.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        check(e.getValue(), param, at + "/properties/" + e.getKey(), depth + 1);
      }
    }
    JsonNode required = s.get("required");
    if (required != null && (!required.isArray() || !allText(required))) {
      throw bad(param, at + "/required", "'required' must be an array of property names");
    }
    JsonNode e = s.get("enum");
    if (e != null && (!e.isArray() || e.isEmpty())) {
      throw bad(param, at + "/enum", "'enum' must be a non-empty array");
    }
    for (String key : new String[] {"items", "additionalProperties", "not"}) {
      JsonNode sub = s.get(key);
      if (sub != null && !(key.equals("items") && sub.isArray())) {
        check(sub, param, at + "/" + key, depth + 1);
      }
    }
    for (String key : new String[] {"anyOf", "oneOf", "allOf", "prefixItems"}) {
      JsonNode list = s.get(key);
      if (list != null) {
        if (!list.isArray() || list.isEmpty()) {
          throw bad(param, at + "/" + key, "'" + key + "' must be a non-empty array of schemas");
        }
        for (int i = 0; i < list.size(); i++) {
          check(list.get(i), param, at + "/" + key + "/" + i, depth + 1);
        }
      }
    }
  }

  private static boolean allText(JsonNode array) {
    for (JsonNode n : array) {
      if (!n.isTextual()) {
        return false;
      }
    }
    return true;
  }

  private static ApiException bad(String param, String at, String what) {
    return ApiException.invalid(param, "Invalid schema in '" + param + "'" + (at.isEmpty() ? "" : " (at " + at + ")") + ": " + what + ".");
  }
}
