"""What users call: tracing (`compile`), op functions, variables and scopes."""
