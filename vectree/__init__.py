"""vectree: question answering over scientific PDFs with page-level citations."""
