package dev.tandem.frontend.openai;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.frontend.http.ApiException;
import org.junit.jupiter.api.Test;

/** A Responses API request as the chat request it amounts to, and what it refuses. */
class ResponsesRequestTest {
  private static ObjectNode json(String s) {
    return (ObjectNode) tree(s);
  }

  private static JsonNode tree(String s) {
    try {
      return ResponseJson.JSON.readTree(s);
    } catch (Exception e) {
      throw new IllegalArgumentException(e);
    }
  }

  private static JsonNode chat(String request) {
    return ResponsesRequest.parse(json(request)).chat();
  }

  @Test
  void instructionsAndAStringInputAreASystemAndAUserMessage() {
    JsonNode chat = chat("{\"model\": \"m\", \"instructions\": \"Be brief.\", \"input\": \"Hi\", \"max_output_tokens\": 9, "
        + "\"temperature\": 0.2, \"stream\": true, \"tandem\": {\"timing\": true}}");
    assertEquals(tree("[{\"role\": \"system\", \"content\": \"Be brief.\"}, {\"role\": \"user\", \"content\": \"Hi\"}]"), chat.get("messages"));
    assertEquals(9, chat.get("max_completion_tokens").asInt());
    assertEquals(0.2, chat.get("temperature").asDouble());
    assertTrue(chat.get("stream").asBoolean());
    assertTrue(chat.path("tandem").path("timing").asBoolean(), "Tandem's own options pass through");
    assertFalse(chat.has("max_output_tokens") || chat.has("instructions") || chat.has("input"));
  }

  /**
   * An agent's second turn: its earlier output items passed back as they were — reasoning dropped,
   * two parallel calls one assistant turn, each output a tool message — and a developer message a
   * system one.
   */
  @Test
  void earlierOutputItemsBecomeTheChatTurnsTheyWere() {
    JsonNode chat = chat("""
        {"model": "m", "input": [
          {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Use tools."}]},
          {"role": "user", "content": "Weather in Paris and Rome?"},
          {"type": "reasoning", "id": "rs_1", "summary": [], "content": [{"type": "reasoning_text", "text": "two calls"}]},
          {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "weather", "arguments": "{\\"city\\":\\"Paris\\"}"},
          {"type": "function_call", "id": "fc_2", "call_id": "call_b", "name": "weather", "arguments": "{\\"city\\":\\"Rome\\"}"},
          {"type": "function_call_output", "call_id": "call_a", "output": "Sunny"},
          {"type": "function_call_output", "call_id": "call_b", "output": [{"type": "input_text", "text": "Rain"}]},
          {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Sunny and rain.", "annotations": []}]}
        ]}""");
    assertEquals(tree("""
        [{"role": "system", "content": [{"type": "text", "text": "Use tools."}]},
         {"role": "user", "content": "Weather in Paris and Rome?"},
         {"role": "assistant", "content": null, "tool_calls": [
           {"id": "call_a", "type": "function", "function": {"name": "weather", "arguments": "{\\"city\\":\\"Paris\\"}"}},
           {"id": "call_b", "type": "function", "function": {"name": "weather", "arguments": "{\\"city\\":\\"Rome\\"}"}}]},
         {"role": "tool", "tool_call_id": "call_a", "content": "Sunny"},
         {"role": "tool", "tool_call_id": "call_b", "content": [{"type": "text", "text": "Rain"}]},
         {"role": "assistant", "content": [{"type": "text", "text": "Sunny and rain."}]}]"""), chat.get("messages"));
  }

  @Test
  void functionToolsChoicesAndTextFormatTakeChatsShapes() {
    JsonNode chat = chat("""
        {"model": "m", "input": "x",
         "tools": [{"type": "function", "name": "weather", "description": "d", "parameters": {"type": "object"}, "strict": true}],
         "tool_choice": {"type": "function", "name": "weather"},
         "text": {"format": {"type": "json_schema", "name": "P", "schema": {"type": "object"}, "strict": true}}}""");
    assertEquals(tree("[{\"type\": \"function\", \"function\": {\"name\": \"weather\", \"description\": \"d\", "
        + "\"parameters\": {\"type\": \"object\"}, \"strict\": true}}]"), chat.get("tools"));
    assertEquals(json("{\"type\": \"function\", \"function\": {\"name\": \"weather\"}}"), chat.get("tool_choice"));
    assertEquals(json("{\"type\": \"json_schema\", \"json_schema\": {\"name\": \"P\", \"schema\": {\"type\": \"object\"}, \"strict\": true}}"),
        chat.get("response_format"));
    assertEquals("required", chat("{\"model\": \"m\", \"input\": \"x\", \"tool_choice\": \"required\"}").get("tool_choice").asText());
    assertFalse(chat("{\"model\": \"m\", \"input\": \"x\", \"text\": {\"format\": {\"type\": \"text\"}}}").has("response_format"));
    assertEquals("low", chat("{\"model\": \"m\", \"input\": \"x\", \"reasoning\": {\"effort\": \"low\"}}").get("reasoning_effort").asText(),
        "reasoning.effort is chat's reasoning_effort (the chat template's to read)");
    assertEquals(7, chat("{\"model\": \"m\", \"input\": \"x\", \"thinking_token_budget\": 7}").get("thinking_token_budget").asInt());
  }

  @Test
  void whatNeedsAStoredResponseOrAHostedToolIsRefusedNamingTheField() {
    String[][] cases = {
        {"{\"input\": \"x\", \"previous_response_id\": \"resp_1\"}", "previous_response_id"},
        {"{\"input\": \"x\", \"conversation\": \"conv_1\"}", "conversation"},
        {"{\"input\": \"x\", \"background\": true}", "background"},
        {"{\"input\": \"x\", \"include\": [\"reasoning.encrypted_content\"]}", "include"},
        {"{\"input\": \"x\", \"truncation\": \"auto\"}", "truncation"},
        {"{\"input\": \"x\", \"reasoning\": {\"summary\": \"auto\"}}", "reasoning.summary"},
        {"{\"input\": \"x\", \"tools\": [{\"type\": \"file_search\"}]}", "tools[0].type"},
        {"{\"input\": \"x\", \"tool_choice\": {\"type\": \"web_search_preview\"}}", "tool_choice"},
        {"{\"input\": [{\"type\": \"item_reference\", \"id\": \"msg_1\"}]}", "input[0].type"},
        {"{\"input\": [{\"role\": \"user\", \"content\": [{\"type\": \"input_file\", \"file_id\": \"f\"}]}]}", "input[0].content[0]"},
        {"{\"input\": [{\"role\": \"robot\", \"content\": \"x\"}]}", "input[0].role"},
        {"{\"input\": [{\"type\": \"function_call\", \"name\": \"f\", \"arguments\": \"{}\"}]}", "input[0].call_id"},
        {"{\"input\": 7}", "input"},
        {"{\"input\": \"x\", \"text\": {\"format\": {\"type\": \"grammar\"}}}", "text.format.type"},
        {"{\"input\": \"x\", \"top_logprobs\": 3}", "top_logprobs"},
    };
    for (String[] c : cases) {
      ApiException e = assertThrows(ApiException.class, () -> ResponsesRequest.parse(json(c[0])), c[0]);
      assertEquals(400, e.status());
      assertEquals(c[1], e.param(), c[0] + ": " + e.getMessage());
    }
    assertTrue(ResponsesRequest.parse(json("{\"input\": \"x\", \"reasoning\": {}, \"truncation\": \"disabled\", \"include\": []}")).chat().has("messages"),
        "the defaults SDKs send are accepted");
  }

  @Test
  void theChatParsersErrorsNameTheResponsesField() {
    ApiException e = ResponsesRequest.renamed(ApiException.invalid("max_completion_tokens", "'max_completion_tokens' must be at least 1."));
    assertEquals("max_output_tokens", e.param());
    assertEquals("'max_output_tokens' must be at least 1.", e.getMessage());
    assertEquals("input[2].content", ResponsesRequest.renamed(ApiException.invalid("messages[2].content", "bad")).param());
    assertEquals("text.format.json_schema", ResponsesRequest.renamed(ApiException.invalid("response_format.json_schema", "bad")).param());
    assertEquals("temperature", ResponsesRequest.renamed(ApiException.invalid("temperature", "bad")).param());
    assertEquals("reasoning.effort", ResponsesRequest.renamed(ApiException.invalid("reasoning_effort", "bad")).param());
  }

  @Test
  void theResponseRepeatsTheRequestsSettingsAndStoresNothing() {
    ObjectNode echo = ResponsesRequest.parse(json("{\"input\": \"x\", \"instructions\": \"i\", \"metadata\": {\"k\": \"v\"}, \"store\": true}")).echo();
    assertEquals("i", echo.get("instructions").asText());
    assertEquals("v", echo.path("metadata").path("k").asText());
    assertFalse(echo.get("store").asBoolean(), "nothing is stored, whatever was asked");
    assertEquals("auto", echo.get("tool_choice").asText());
    assertEquals("text", echo.path("text").path("format").path("type").asText());
  }
}
