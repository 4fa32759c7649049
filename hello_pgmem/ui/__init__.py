"""The read-only web view (``hello-pgmem ui``): a user's memories, searches explained, the graph
drawn, RAG documents and the analytics views, in a browser. Needs ``pip install 'hello-pgmem[ui]'``."""

from hello_pgmem.ui.app import ui_app
from hello_pgmem.ui.login import Login

__all__ = ["Login", "ui_app"]
