"""Letta agent files (.af) in and out: ``export_agent_file``, ``read_agent_file`` and
``import_agent_file`` (``summary`` for what an import reports).

exporting     MemDesk -> .af (letta.py: the message-level mapping both ways)
extension     the ``"memdesk"`` section, exported and restored
importing     the import's entry point and the planning every file shares (plan.py: its types)
letta_import  a file from Letta, mapped; writing: the planned import, in one transaction
"""

from memdesk.core.transfer.agentfile.exporting import export_agent_file, local_llm_config
from memdesk.core.transfer.agentfile.files import FORMATS, export_document, export_path, import_path
from memdesk.core.transfer.agentfile.importing import import_agent_file, plan_import
from memdesk.core.transfer.agentfile.model import EXTENSION_KEY, GraphTransfer
from memdesk.core.transfer.agentfile.reading import MAX_FILE_BYTES, detect_format, parse_agent_file, read_agent_file
from memdesk.core.transfer.agentfile.summary import ImportedAgent, ImportSummary

__all__ = [
    "EXTENSION_KEY",
    "FORMATS",
    "MAX_FILE_BYTES",
    "GraphTransfer",
    "export_document",
    "export_path",
    "import_path",
    "ImportSummary",
    "ImportedAgent",
    "detect_format",
    "export_agent_file",
    "import_agent_file",
    "local_llm_config",
    "parse_agent_file",
    "plan_import",
    "read_agent_file",
]
