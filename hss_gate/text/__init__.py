"""Text handling: documents, sentences, meaning-preserving perturbation and the lexical resources
it draws on."""
