namespace sixnd { int tokenizer_placeholder; }
