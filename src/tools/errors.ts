/**
 * Every `code` a tool can raise (always HTTP 400, or an MCP `isError` result; never settled), with
 * the tools that raise it and its meaning. {@link ToolError} only accepts these codes, so a new
 * code cannot be thrown without being documented here; docs/errors.md, OpenAPI and llms.txt are
 * checked against or generated from this table.
 */
export const TOOL_ERROR_CODES = {
  invalid_unicode: {
    tools: 'all',
    meaning: 'A string or object key holds a lone UTF-16 surrogate, which has no UTF-8 form.',
  },
  invalid_base64: {
    tools: 'base64, pipeline',
    meaning:
      'Malformed Base64: a bad character, mixed alphabets, misplaced or bad padding, or an impossible length.',
  },
  invalid_hex: {
    tools: 'pipeline',
    meaning: 'hex_decode on a non-hex character or an odd number of digits.',
  },
  invalid_url_encoding: {
    tools: 'pipeline',
    meaning: 'url_decode on a "%" not followed by two hex digits.',
  },
  number_out_of_range: {
    tools: 'json-validate, jwt-inspect, pipeline',
    meaning:
      'A JSON number beyond the IEEE 754 double range (such as 1e400), which parsing would turn into Infinity; details.field is its JSON Pointer.',
  },
  json_parse_failed: {
    tools: 'pipeline',
    meaning:
      'json_parse (or json_canonicalize on bytes) on bytes that are not UTF-8 JSON; details.step names the step.',
  },
  json_too_deep: {
    tools: 'pipeline',
    meaning: 'JSON parsed by a step is nested more than 128 levels.',
  },
  input_too_deep: { tools: 'pipeline', meaning: '`input` is nested more than 128 levels.' },
  intermediate_too_large: { tools: 'pipeline', meaning: "A step's output exceeds 4 MiB." },
  schema_too_large: { tools: 'json-validate', meaning: 'The schema is more than 64 KiB as JSON.' },
  schema_too_deep: {
    tools: 'json-validate',
    meaning: 'The schema nests more than 128 levels of JSON or more than 32 levels of subschemas.',
  },
  value_too_deep: { tools: 'json-validate', meaning: '`value` is nested more than 128 levels.' },
  value_too_large: {
    tools: 'json-validate',
    meaning: 'An array of more than 10,000 items while the schema uses uniqueItems.',
  },
  unsupported_keyword: {
    tools: 'json-validate',
    meaning: 'A keyword the validator does not support (reported, never ignored).',
  },
  unsupported_ref: {
    tools: 'json-validate',
    meaning: 'A $ref that does not start with "#" (only local references are supported).',
  },
  unsupported_dialect: {
    tools: 'json-validate',
    meaning: '$schema is not JSON Schema draft 2020-12.',
  },
  invalid_schema: {
    tools: 'json-validate',
    meaning:
      'A keyword value of the wrong shape, an invalid regular expression, a subschema that is not an object or boolean, or a malformed $id.',
  },
  unresolved_ref: { tools: 'json-validate', meaning: 'A local $ref that points to no subschema.' },
  ref_cycle: {
    tools: 'json-validate',
    meaning: 'References that loop back to the same subschema without descending into the value.',
  },
  validation_too_complex: {
    tools: 'json-validate',
    meaning:
      'The evaluator ran out of stack (very large error lists); simplify the schema or split the value.',
  },
  invalid_jwt: {
    tools: 'jwt-inspect',
    meaning:
      'Not a compact JWS or JWE: wrong segment count, a bad base64url segment, an empty or non-JSON header or payload, or over 16 KiB.',
  },
  tool_failed: {
    tools: 'all',
    meaning: 'The tool failed unexpectedly on this input; nothing was charged.',
  },
} as const satisfies Record<string, { tools: string; meaning: string }>

/** A machine-readable tool error code. */
export type ToolErrorCode = keyof typeof TOOL_ERROR_CODES
