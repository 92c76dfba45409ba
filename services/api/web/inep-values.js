// Values as the corrected census file writes them (SPEC §3.4), so the persons table shows what
// the file will hold: nome in upper case, accents removed, only A–Z and single spaces, at most 100
// characters; cpf 11 digits; inep 12; dates DD/MM/YYYY. Each returns null when the value cannot
// be written that way (the file then keeps the text file's value: a correction not applied).
// A mirror of shared/src/core/censo/inep-values.ts, which the page cannot import;
// test/browser/page-inep-values.test.ts compares the two over every code point.

export const MAX_NOME = 100;

/**
 * Latin letters that are still not ASCII once their accents are taken off, by the letters the
 * core writes for them (any-ascii's spelling, upper case, only A–Z). A letter absent here is
 * dropped, as the core drops it.
 */
const LATIN = {
  A: 'ªȺɅɐɑɒʌᴀᴬᵃᵄᵅᶏᶐᶛᶺẚₐⱥⱭⱯⱰꞺꞻꬰꭤＡａ',
  AA: 'Ꜳꜳ𐞀',
  AE: 'ÆæᴁᴂᴭᵆꞚꞛꬱ𐞃',
  AO: 'Ꜵꜵ',
  AU: 'Ꜷꜷ',
  AV: 'ꜸꜹꜺꜻ',
  AY: 'Ꜽꜽ',
  B: 'ƀƁƂƃɃɓʙᴃᴮᴯᵇᵬᶀꞖꞗꞴꞵＢｂ𐞄𐞅',
  C: 'ƇƈǀȻȼɕᴄᶜᶝⅭⅽↃↄꜾꜿꞒꞓꞔꟄꟲＣｃ𐞶𝼝',
  D: 'ÐðĐđƉƊƋƌȡɖɗᴅᴆᴰᵈᵭᶁᶑᶞẟⅮⅾꝱꝹꝺꟇꟈＤｄ𐞋𐞌𐞍𝼥',
  DB: 'ȸ',
  DZ: 'ƻǄǅǆǱǲǳʣʥꭦ𐞇𐞈𐞉',
  DZH: 'ʤ𐞊𝼒𝼙',
  E: 'ƎƏƐǝɆɇɘəɛɜᴇᴈᴱᴲᵉᵊᵋᵌᶒᶓᶔᶕᶟₑₔⱸⱻꞫꬲꬳꬴＥｅ𐞎',
  ER: 'ɚɝ',
  F: 'ƑƒɸᵮᶂᶠᶲℲⅎꜰꝻꝼꞘꞙꟳꟻꬵＦｆ',
  FF: 'ﬀ',
  FFI: 'ﬃ',
  FFL: 'ﬄ',
  FI: 'ﬁ',
  FL: 'ﬂ',
  FNG: 'ʩ𐞐𝼀',
  G: 'ƓƔǤǥɠɡɢɣʛˠᴳᵍᵷᵹᶃᶢꝽꞠꞡꞬꟐꟑꬶＧｇ𐞒𐞓𐞔𝼁𝼂',
  GH: 'Ƣƣ',
  H: 'ĦħɦɧʜʰʱᴴₕⱧⱨⱵⱶꜦꜧꞕꞪꟵꟶꟸꭜＨｈ𐞕𐞖𐞗',
  HW: 'ƕǶ',
  I: 'ıƖƗɨɩɪɿʅᴉᴵᵎᵢᵻᵼᶖᶤᶥᶦᶧⁱⅠⅰꞮꞼꞽꟷꟾＩｉ𝼚',
  IA: 'ꭠ',
  IE: 'ꭡ',
  II: 'Ⅱⅱ',
  III: 'Ⅲⅲ',
  IJ: 'Ĳĳ',
  IV: 'Ⅳⅳ',
  IX: 'Ⅸⅸ',
  J: 'ȷɈɉɟʄʝʲᴊᴶᶡᶨⱼꞲＪｊ𐞘',
  K: 'ƘƙʞᴋᴷᵏᶄₖⱩⱪꝀꝁꝂꝃꝄꝅꞢꞣꞰＫｋ𝼃𝼐',
  L: 'ĿŀŁłƚƛȴȽɫɬɭʟˡᴌᴸᶅᶩᶪᶫₗⅬⅼↆⱠⱡⱢꝆꝇꝈꝉꝲꞎꞭꟚꟛꟜꬷꬸꬹꭝꭞＬｌ𐞛𐞜𐞝𝼄𝼑𝼓𝼦',
  LJ: 'Ǉǈǉ',
  LL: 'ỺỻꞀꞁ',
  LS: 'ʪ𐞙',
  LZ: 'ʫ𐞚',
  LZH: 'ɮ𐞞𐞟𝼅',
  M: 'ɱᴍᴹᵐᵯᶆᶬₘⅯⅿⱮꝳꟽꟿꬺＭｍ',
  N: 'ŉƝƞȠȵɲɳɴᴎᴺᴻᵰᶇᶮᶯᶰⁿₙꝴꞐꞑꞤꞥꬻＮｎ𝼧',
  NG: 'ŊŋᵑꝾꝿꬼ𝼇𝼔',
  NJ: 'Ǌǋǌ',
  O: 'ºØøƆƟɔɞɵᴏᴐᴑᴒᴓᴖᴗᴼᵒᵓᵔᵕᶗᶱₒⱷⱺꝊꝋꝌꝍꞶꞷꟀꟁꬽꬾꬿＯｏ𐞏𐞢𝼛',
  OE: 'ŒœɶʚᴔꞜꞝꟹꭀꭁꭂꭢ𐞣',
  OO: 'Ꝏꝏꭃꭄ',
  OU: 'Ȣȣᴕᴽ',
  P: 'ƤƥᴘᴾᵖᵱᵽᶈₚⱣꝐꝑꝒꝓꝔꝕꟼＰｐ',
  PC: 'ʘ𐞵',
  Q: 'ĸǃɊɋʗʠꝖꝗꝘꝙꞯꟴＱｑ𐞥𐞹𝼊𝼏',
  QC: 'ǂ𐞸𝼋𝼌',
  QP: 'ȹ',
  R: 'ƦɌɍɹɺɻɼɽɾʀʁʳʴʵʶᴙᴚᴿᵣᵲᵳᶉⱤⱹꝚꝛꝜꝝꝵꝶꞂꞃꞦꞧꭅꭆꭇꭉꭋꭌꭨＲｒ𐞦𐞧𐞨𐞩𐞪𝼈𝼕𝼖𝼨',
  RR: 'ꭈꭊ',
  S: 'ſȿʂˢᵴᶊᶳẜẝₛⱾꜱꝬꝭꝸꞄꞅꞨꞩꟅꟉꟊꟌꟍꟖꟗꟘꟙＳｓ𐞺𝼞𝼩',
  SH: 'Ʃƪʃʆᶋᶘᶴꭍ',
  SS: 'ßẞ',
  ST: 'ﬅﬆ',
  T: 'ŦŧƫƬƭƮȶȾʇʈᴛᵀᵗᵵᶵₜⱦꝷꞆꞇꞱＴｔ𐞯𝼉𝼍𝼪',
  TC: 'ʨ𐞫',
  TH: 'ÞþᵺꝤꝥꝦꝧ',
  THTH: 'ꟓ',
  TS: 'ƾʦꭧ𐞬𐞭',
  TSH: 'ʧ𐞮𝼗𝼜',
  TZ: 'Ꜩꜩ',
  U: 'ƱɄɤɷʉʊᴜᴝᴞᵁᵘᵙᵤᵾᵿᶙᶶᶷᶸꞸꞹꞾꞿꟋꭎꭏꭒꭟＵｕ𐞑𐞤',
  UE: 'ᵫꞞꞟ',
  UI: 'ꭐꭑ',
  UO: 'ꭣ',
  V: 'ƲʋᴠᵛᵥᶌᶹỼỽⅤⅴⱱⱴⱽꝞꝟꝨꝩＶｖ𐞰',
  VI: 'Ⅵⅵ',
  VII: 'Ⅶⅶ',
  VIII: 'Ⅷⅷ',
  VY: 'Ꝡꝡ',
  W: 'ƜƿǷɯɰʍʷᴟᴡᵂᵚᶭⱲⱳꟂꟃꟺꭩＷｗ',
  WW: 'ʬꟕ',
  X: 'ǁʖˣᶍₓⅩⅹꞳꭓꭔꭕꭖꭗꭘꭙＸｘ𐞷𝼎',
  XI: 'Ⅺⅺ',
  XII: 'Ⅻⅻ',
  Y: 'ƳƴȜȝɎɏɥʎʏʮʯʸᶣỾỿꞍꭚＹｙ𐞠𐞡𐞲𝼆',
  Z: 'ƍƵƶȤȥɀʐʑᴢᵶᶎᶻᶼᶽⱫⱬⱿꝢꝣꟆＺｚ',
  ZH: 'Ʒƺʒʓᴣᶚᶾ𝼘',
};

const LETTERS = new Map();
for (const [written, letters] of Object.entries(LATIN)) for (const letter of letters) LETTERS.set(letter, written);

export function inepNome(value) {
  const text = value
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .replace(/[^\p{ASCII}]/gu, (letter) => LETTERS.get(letter) ?? letter)
    .toUpperCase()
    .replace(/[^A-Z ]/g, '')
    .replace(/ {2,}/g, ' ')
    .trim()
    .slice(0, MAX_NOME)
    .trimEnd();
  return text === '' ? null : text;
}

/** Exactly `digits` digits once the usual punctuation of a CPF or an id is taken out. */
function digitsOnly(value, digits) {
  const text = value.replace(/[\s.\-/]/g, '');
  return text.length === digits && /^\d+$/.test(text) ? text : null;
}

export const inepCpf = (value) => digitsOnly(value, 11);
export const inepId = (value) => digitsOnly(value, 12);

const DMY = /^(\d{1,2})\/(\d{1,2})\/(\d{4})$/;
const COMPACT = /^(\d{2})(\d{2})(\d{4})$/;
const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt].*)?$/;

/** `DD/MM/YYYY` from the shapes SPEC §3.2 recognises; a day the calendar does not have is null. */
export function inepData(value) {
  const text = value.trim();
  let match = DMY.exec(text) ?? COMPACT.exec(text);
  if (match) return format(match[1], match[2], match[3]);
  match = ISO.exec(text);
  if (match) return format(match[3], match[2], match[1]);
  return null;
}

function format(day, month, year) {
  const d = Number(day);
  const m = Number(month);
  if (m < 1 || m > 12 || d < 1 || d > daysIn(m, Number(year))) return null;
  return `${day.padStart(2, '0')}/${month.padStart(2, '0')}/${year}`;
}

function daysIn(month, year) {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** The writer of each field the corrected file rewrites, by the field's name in `pessoas`. */
export const WRITERS = { cpf: inepCpf, nome: inepNome, data_nascimento: inepData, inep: inepId };
