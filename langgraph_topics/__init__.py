"""Topic-partitioned memory for LangChain and LangGraph chat applications."""
