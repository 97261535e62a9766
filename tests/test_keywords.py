from langgraph_topics.keywords import (
    extract_keywords,
    keyword_groups,
    keyword_overlap,
    missing_terms,
    shared_keywords,
    term_coverage,
    top_keywords,
)


def test_chinese_runs_give_two_character_pieces_and_short_whole_runs() -> None:
    keywords = extract_keywords("股票估值")
    assert keywords[0] == "股票估值"  # a run of at most 4 characters is kept whole
    assert {"股票", "票估", "估值"} <= set(keywords)


def test_long_chinese_run_is_not_kept_whole() -> None:
    keywords = extract_keywords("人工智能芯片")
    assert "人工智能芯片" not in keywords
    assert {"人工", "智能", "芯片"} <= set(keywords)


def test_chinese_stop_words_and_particles_cut_runs() -> None:
    keywords = extract_keywords("最近美股的估值是不是太高了？我们怎么看")
    assert "美股" in keywords and "估值" in keywords
    for stop in ("最近", "我们", "怎么", "是不是", "股的", "的估"):
        assert stop not in keywords
    assert extract_keywords("股票和债券") == ["股票", "债券"]


def test_latin_words_of_three_letters_or_more_lowercased_without_stop_words() -> None:
    keywords = extract_keywords("What is the P/E ratio of Apple and NVDA for this year?")
    assert keywords == ["ratio", "apple", "nvda", "year"]


def test_regular_plurals_are_folded() -> None:
    assert extract_keywords("stocks companies news") == ["stock", "company", "news"]


def test_digit_runs_are_kept() -> None:
    keywords = extract_keywords("In 2024 the fund returned 12.5 percent on 3 assets")
    assert "2024" in keywords and "12.5" in keywords
    assert "3" not in keywords  # a single digit is list numbering more often than a number


def test_mixed_language_text() -> None:
    keywords = extract_keywords("英伟达 NVDA 的市盈率在2024年很高")
    assert {"英伟", "伟达", "nvda", "市盈", "盈率", "2024"} <= set(keywords)


def test_keywords_are_unique_and_ordered_by_first_appearance() -> None:
    assert extract_keywords("pork pork sauce pork") == ["pork", "sauce"]


def test_keyword_groups_follow_words_and_runs() -> None:
    assert keyword_groups("股票估值 and Apple") == [["股票估值", "股票", "票估", "估值"], ["apple"]]


def test_keyword_overlap_is_the_overlap_coefficient() -> None:
    assert keyword_overlap({"a1", "b2"}, {"a1", "b2", "c3", "d4"}) == 1.0
    assert keyword_overlap({"a1", "b2"}, {"a1", "c3"}) == 0.5
    assert keyword_overlap(set(), {"a1"}) == 0.0
    assert keyword_overlap("braised pork", "How long to braise the pork belly?") == 0.5


def test_shared_keywords_keep_the_first_sides_order() -> None:
    assert shared_keywords("股票 估值 pork", "估值 和 股票") == ["股票", "估值"]


def test_top_keywords_rank_by_document_frequency_and_join_pieces() -> None:
    texts = ["我想学做红烧肉", "红烧肉需要五花肉、酱油、冰糖", "红烧肉要炖多久？"]
    top = top_keywords(texts, 3)
    assert top[0] == "红烧肉"
    assert "红烧" not in top and "烧肉" not in top


def test_top_keywords_weights_favour_texts() -> None:
    texts = ["pork sauce", "sugar"]
    assert top_keywords(texts, 1, weights=[1.0, 5.0]) == ["sugar"]


def test_missing_terms_judge_chinese_runs_by_their_pieces_and_latin_words_by_stem() -> None:
    assert missing_terms("股票估值", "我们聊过股票，也聊过估值") == []
    assert missing_terms("股市崩盘", "股市很好") == ["股市崩盘"]
    assert missing_terms("mortgage refinancing decision", "we refinance the mortgage") == [
        "decision"
    ]
    assert missing_terms("2024 budget", "the 2023 budget") == ["2024"]


def test_term_coverage_counts_each_run_once() -> None:
    assert term_coverage("股票估值现在高吗", "Keywords: 股票, 估值") == 1.0
    assert term_coverage("pork and tofu", "braised pork") == 0.5
    assert term_coverage("好的", "anything") == 0.0
