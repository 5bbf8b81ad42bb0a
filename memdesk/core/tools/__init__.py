"""Functions the model can call. Each is a plain Python function; its JSON schema is generated
from its signature and docstring (``registry``)."""
