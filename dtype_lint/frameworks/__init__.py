"""What dtype-lint knows of the ML frameworks' vocabulary, without LibCST: dtype spellings,
cast methods and the base classes that make a class a module or a dataset."""
